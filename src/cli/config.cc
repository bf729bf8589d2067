// `gpupack config <kind>`: prints Kubernetes configuration for gpupack's
// companions (device plugin, mig-parted, descheduler, kube-scheduler).
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <stdexcept>

#include "cli/commands.h"
#include "io/k8s_config.h"

namespace gpupack::cli {
namespace {

struct Output {
  std::string path;         // "" = stdout
  std::string configmap;    // wrap in a ConfigMap of this name when set
  std::string ns = "gpupack-system";
  std::string key;
};

void add_output_flags(CLI::App* cmd, Output& out, const std::string& default_key) {
  out.key = default_key;
  cmd->add_option("-o,--output", out.path, "write to this file instead of stdout");
  cmd->add_option("--configmap", out.configmap, "wrap the document in a ConfigMap with this name");
  cmd->add_option("--namespace", out.ns, "namespace of the ConfigMap")->capture_default_str();
  cmd->add_option("--key", out.key, "data key of the ConfigMap")->capture_default_str();
}

void write(const Output& out, const std::string& text) {
  std::string doc = out.configmap.empty() ? text : configmap_yaml(out.configmap, out.ns, out.key, text);
  if (out.path.empty()) {
    fmt::print("{}", doc);
    return;
  }
  std::ofstream f(out.path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open for writing", out.path));
  f << doc;
  if (!f) throw std::runtime_error(fmt::format("{}: write failed", out.path));
}

}  // namespace

void add_config_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("config", "print Kubernetes configuration (device plugin, MIG, descheduler, scheduler)");
  cmd->require_subcommand(1);

  // --- sharing ---
  struct SharingOpts {
    std::string mode = "time-slicing";
    int replicas = 4;
    std::vector<std::string> resources = {"nvidia.com/gpu"};
    bool rename = false;
    std::string mig_strategy = "none";
    Output out;
  };
  auto sharing = std::make_shared<SharingOpts>();
  auto* s = cmd->add_subcommand("sharing", "NVIDIA device-plugin sharing config (time-slicing or MPS)");
  s->add_option("--mode", sharing->mode, "time-slicing | mps")->check(CLI::IsMember({"time-slicing", "mps"}))->capture_default_str();
  s->add_option("--replicas", sharing->replicas, "replicas per GPU (>= 2)")->capture_default_str();
  s->add_option("--resource", sharing->resources, "resource to share (repeatable)")->capture_default_str();
  s->add_flag("--rename-by-default", sharing->rename, "advertise replicas as <resource>.shared");
  s->add_option("--mig-strategy", sharing->mig_strategy, "none | single | mixed")->capture_default_str();
  add_output_flags(s, sharing->out, "any");
  s->callback([sharing] {
    SharingConfig cfg;
    cfg.mode = sharing->mode == "mps" ? SharingConfig::Mode::kMps : SharingConfig::Mode::kTimeSlicing;
    cfg.rename_by_default = sharing->rename;
    cfg.mig_strategy = sharing->mig_strategy;
    for (const auto& r : sharing->resources) cfg.resources.push_back({r, sharing->replicas});
    write(sharing->out, device_plugin_config_yaml(cfg));
  });

  // --- mig ---
  struct MigOpts {
    std::string name = "gpupack";
    std::vector<std::string> layouts;
    std::vector<std::string> device_filter;
    std::string devices = "all";
    Output out;
  };
  auto mig = std::make_shared<MigOpts>();
  auto* m = cmd->add_subcommand("mig", "nvidia-mig-parted config with one named layout");
  m->add_option("--name", mig->name, "config name (the nvidia.com/mig.config label value)")->capture_default_str();
  m->add_option("--layout", mig->layouts, "profile counts per GPU, e.g. 1g.10gb=2,2g.20gb=1,3g.40gb=1; "
                                          "repeat for several entries, \"disabled\" for MIG off")
      ->required();
  m->add_option("--device-filter", mig->device_filter, "PCI device filter, e.g. 0x233010DE (repeatable)");
  m->add_option("--devices", mig->devices, "\"all\" or GPU indices such as 0,1,2")->capture_default_str();
  add_output_flags(m, mig->out, "config.yaml");
  m->callback([mig] {
    MigPartedEntry base;
    base.device_filter = mig->device_filter;
    if (mig->devices != "all") {
      std::vector<int> idx;
      size_t pos = 0;
      std::string d = mig->devices;
      while (pos <= d.size()) {
        size_t comma = d.find(',', pos);
        std::string tok = d.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (tok.empty() || tok.size() > 2 || tok.find_first_not_of("0123456789") != std::string::npos) {
          throw std::invalid_argument(fmt::format("--devices \"{}\": \"{}\" is not a GPU index", d, tok));
        }
        idx.push_back(std::stoi(tok));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      base.devices = idx;
    }
    MigPartedConfig cfg;
    for (const auto& layout : mig->layouts) {
      MigPartedEntry e = base;
      if (layout == "disabled") {
        e.mig_enabled = false;
      } else {
        e.mig_devices = parse_profile_counts(layout);
      }
      cfg[mig->name].push_back(e);
    }
    cfg["all-disabled"] = {MigPartedEntry{{}, std::nullopt, false, {}}};
    write(mig->out, mig_parted_config_yaml(cfg));
  });

  // --- descheduler ---
  struct DeschedOpts {
    std::string strategy = "low";
    int gpu = 20, gpu_target = 50, cpu = 20, cpu_target = 50, memory = 20, memory_target = 50;
    Output out;
  };
  auto ds = std::make_shared<DeschedOpts>();
  auto* d = cmd->add_subcommand("descheduler", "descheduler policy (Low/HighNodeUtilization with nvidia.com/gpu)");
  d->add_option("--strategy", ds->strategy, "low | high")->check(CLI::IsMember({"low", "high"}))->capture_default_str();
  d->add_option("--gpu-threshold", ds->gpu, "nvidia.com/gpu percent threshold")->capture_default_str();
  d->add_option("--gpu-target", ds->gpu_target, "nvidia.com/gpu percent target (low only)")->capture_default_str();
  d->add_option("--cpu-threshold", ds->cpu)->capture_default_str();
  d->add_option("--cpu-target", ds->cpu_target)->capture_default_str();
  d->add_option("--memory-threshold", ds->memory)->capture_default_str();
  d->add_option("--memory-target", ds->memory_target)->capture_default_str();
  add_output_flags(d, ds->out, "policy.yaml");
  d->callback([ds] {
    DeschedulerConfig cfg;
    bool low = ds->strategy == "low";
    cfg.strategy = low ? DeschedulerConfig::Strategy::kLowNodeUtilization
                       : DeschedulerConfig::Strategy::kHighNodeUtilization;
    cfg.thresholds = {{"cpu", ds->cpu}, {"memory", ds->memory}, {"nvidia.com/gpu", ds->gpu}};
    cfg.target_thresholds = {{"cpu", ds->cpu_target}, {"memory", ds->memory_target}, {"nvidia.com/gpu", ds->gpu_target}};
    if (!low) cfg.target_thresholds.clear();
    write(ds->out, descheduler_policy_yaml(cfg));
  });

  // --- scheduler ---
  auto sc = std::make_shared<std::pair<SchedulerExtenderConfig, Output>>();
  auto* k = cmd->add_subcommand("scheduler", "KubeSchedulerConfiguration with the gpupack extender");
  SchedulerExtenderConfig& c = sc->first;
  k->add_option("--scheduler-name", c.scheduler_name)->capture_default_str();
  k->add_option("--url", c.url_prefix, "extender urlPrefix")->capture_default_str();
  k->add_option("--weight", c.weight, "prioritize weight (> 0)")->capture_default_str();
  k->add_option("--http-timeout", c.http_timeout)->capture_default_str();
  k->add_option("--managed-resource", c.managed_resources, "resource the extender accounts for (repeatable)")
      ->capture_default_str();
  k->add_flag("--ignorable", c.ignorable, "scheduling proceeds when the extender fails");
  k->add_flag("!--no-node-cache", c.node_cache_capable, "send full Node objects instead of names");
  k->add_flag("--leader-elect", c.leader_elect, "enable leader election");
  add_output_flags(k, sc->second, "scheduler-config.yaml");
  k->callback([sc] { write(sc->second, scheduler_config_yaml(sc->first)); });
}

}  // namespace gpupack::cli
