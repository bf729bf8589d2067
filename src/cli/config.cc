// `gpupack config <kind>`: prints Kubernetes configuration for gpupack's
// companions (device plugin, mig-parted, descheduler, kube-scheduler).
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <stdexcept>

#include "cli/commands.h"
#include "io/k8s_config.h"
#include "mig/mig_geometry.h"
#include "mig/mig_parted_config.h"

namespace gpupack::cli {
namespace {

struct Output {
  std::string path;       // "" = stdout
  std::string configmap;  // wrap in a ConfigMap of this name when set
  std::string ns = "gpupack-system";
  std::string key;
};

void add_output_flags(CLI::App* cmd, Output& out, const std::string& default_key) {
  out.key = default_key;
  cmd->add_option("-o,--out", out.path, "write to this file instead of stdout");
  cmd->add_option("--output", out.path, "same as --out (older spelling)")->group("");
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

// `config sharing`.
void add_sharing_subcommand(CLI::App* cmd) {
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
  s->add_option("--mode", sharing->mode, "time-slicing | mps")
      ->check(CLI::IsMember({"time-slicing", "mps"}))
      ->capture_default_str();
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
}

// `config mig`.
void add_mig_subcommand(CLI::App* cmd) {
  struct MigOpts {
    std::string name = "gpupack";
    std::vector<std::string> layouts;
    std::vector<std::string> device_filter;
    std::string devices = "all";
    std::string gpu_model;  // "" = unknown: only the limits every MIG GPU shares
    Output out;
  };
  auto mig = std::make_shared<MigOpts>();
  auto* m = cmd->add_subcommand("mig", "nvidia-mig-parted config with one named layout");
  m->add_option("--name", mig->name, "config name (the nvidia.com/mig.config label value)")->capture_default_str();
  m->add_option("--layout", mig->layouts,
                "profile counts per GPU, e.g. 1g.10gb=2,2g.20gb=1,3g.40gb=1; "
                "repeat for several entries, \"disabled\" for MIG off")
      ->required();
  m->add_option("--device-filter", mig->device_filter, "PCI device filter, e.g. 0x233010DE (repeatable)");
  m->add_option("--devices", mig->devices, "\"all\" or GPU indices such as 0,1,2")->capture_default_str();
  m->add_option("--gpu-model", mig->gpu_model,
                "GPU model (e.g. A100-80GB, H100-80GB): each layout must have a placement on it");
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
    const MigGeometry* geo = nullptr;
    if (!mig->gpu_model.empty()) {
      geo = mig_geometry(mig->gpu_model);
      if (!geo) {
        std::string known;
        for (const auto& g : all_mig_geometries()) known += (known.empty() ? "" : ", ") + g.model_name;
        throw std::invalid_argument(
            fmt::format("--gpu-model \"{}\": unknown or not MIG-capable (MIG models: {})", mig->gpu_model, known));
      }
      // The layout was checked for this model only: select its boards.
      if (base.device_filter.empty()) base.device_filter = geo->pci_device_ids;
    }
    if (mig->name == "all-disabled") {
      throw std::invalid_argument(
          "--name all-disabled: that name is reserved for the MIG-off config the file always has");
    }
    MigPartedConfig cfg;
    for (const auto& layout : mig->layouts) {
      MigPartedEntry e = base;
      if (layout == "disabled") {
        e.mig_enabled = false;
      } else {
        e.mig_enabled = true;
        e.mig_devices = parse_profile_counts(layout);
        if (const std::string why = check_mig_devices(e.mig_devices, geo); !why.empty()) {
          throw std::invalid_argument(fmt::format("--layout \"{}\": {}", layout, why));
        }
      }
      cfg.configs[mig->name].push_back(e);
    }
    MigPartedEntry off;  // devices: all, mig-enabled: false
    cfg.configs["all-disabled"] = {off};
    write(mig->out, to_yaml(cfg));
  });
}

// `config descheduler`.
void add_descheduler_subcommand(CLI::App* cmd) {
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
  d->add_option("--cpu-threshold", ds->cpu, "cpu percent threshold")->check(CLI::Range(0, 100))->capture_default_str();
  d->add_option("--cpu-target", ds->cpu_target, "cpu percent target (low only)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  d->add_option("--memory-threshold", ds->memory, "memory percent threshold")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  d->add_option("--memory-target", ds->memory_target, "memory percent target (low only)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  add_output_flags(d, ds->out, "policy.yaml");
  d->callback([ds] {
    DeschedulerConfig cfg;
    bool low = ds->strategy == "low";
    cfg.strategy =
        low ? DeschedulerConfig::Strategy::kLowNodeUtilization : DeschedulerConfig::Strategy::kHighNodeUtilization;
    cfg.thresholds = {{"cpu", ds->cpu}, {"memory", ds->memory}, {"nvidia.com/gpu", ds->gpu}};
    cfg.target_thresholds = {
        {"cpu", ds->cpu_target}, {"memory", ds->memory_target}, {"nvidia.com/gpu", ds->gpu_target}};
    if (!low) cfg.target_thresholds.clear();
    write(ds->out, descheduler_policy_yaml(cfg));
  });
}

// `config scheduler`.
void add_scheduler_subcommand(CLI::App* cmd) {
  struct SchedOpts {
    SchedulerExtenderConfig cfg;
    std::string kube_version = fmt::format("1.{}", kSchedulerMaxKubeMinor);
    Output out;
  };
  auto sc = std::make_shared<SchedOpts>();
  auto* k = cmd->add_subcommand("scheduler", "KubeSchedulerConfiguration with the gpupack extender");
  SchedulerExtenderConfig& c = sc->cfg;
  k->add_option("--kube-version", sc->kube_version,
                fmt::format("Kubernetes release of the scheduler, 1.{} .. 1.{}: picks the config API version it reads",
                            kSchedulerMinKubeMinor, kSchedulerMaxKubeMinor))
      ->capture_default_str();
  k->add_option("--scheduler-name", c.scheduler_name,
                "schedulerName of the profile (pods that set it are scheduled with gpupack; serve "
                "--scheduler-name must match)")
      ->capture_default_str();
  k->add_option("--url", c.url_prefix, "extender urlPrefix")->capture_default_str();
  k->add_option("--weight", c.weight, "prioritize weight (> 0)")->capture_default_str();
  k->add_option("--http-timeout", c.http_timeout,
                "extender httpTimeout; keep it above serve --gang-bind-wait (8s) so held gang binds are answered")
      ->capture_default_str();
  k->add_option("--managed-resource", c.managed_resources,
                "only pods requesting this resource reach the extender (repeatable; pods asking for GPUs only by "
                "annotation then bypass gpupack)");
  k->add_flag("--ignorable", c.ignorable, "scheduling proceeds when the extender fails");
  k->add_flag("--node-cache-capable", c.node_cache_capable,
              "send node names instead of full Node objects (gpupack serve must know the nodes by those names: API "
              "mode)");
  k->add_flag("--leader-elect", c.leader_elect, "enable leader election");
  add_output_flags(k, sc->out, "scheduler-config.yaml");
  k->callback([sc] {
    sc->cfg.kube_minor = parse_kube_minor(sc->kube_version, kSchedulerMinKubeMinor, kSchedulerMaxKubeMinor);
    const std::string text = scheduler_config_yaml(sc->cfg);
    for (const auto& w : scheduler_config_warnings(sc->cfg)) fmt::print(stderr, "gpupack: warning: {}\n", w);
    write(sc->out, text);
  });
}

// `config dra`.
void add_dra_subcommand(CLI::App* cmd) {
  struct DraOpts {
    DraConfig cfg;
    std::string kube_version = fmt::format("1.{}", kDraMinKubeMinor);
    Output out;
  };
  auto dra = std::make_shared<DraOpts>();
  auto* r = cmd->add_subcommand("dra", "DRA DeviceClasses and claims for whole-GPU, shared and MIG requests");
  r->add_option(
       "--kube-version", dra->kube_version,
       fmt::format("Kubernetes release, 1.{} .. 1.{} (resource.k8s.io/v1)", kDraMinKubeMinor, kDraMaxKubeMinor))
      ->capture_default_str();
  r->add_option("--namespace", dra->cfg.ns, "namespace of the claims and templates")->capture_default_str();
  r->add_option("--gpus", dra->cfg.whole_gpus, "GPUs per whole-GPU claim")->capture_default_str();
  r->add_option("--shared-memory-mib", dra->cfg.shared_memory_mib,
                "shared claim: a GPU with at least this much memory (0 = any)")
      ->capture_default_str();
  r->add_option("--mig-profile", dra->cfg.mig_profile, "MIG profile of the MIG template")->capture_default_str();
  r->add_option("--mig-count", dra->cfg.mig_count, "MIG devices per MIG claim")->capture_default_str();
  r->add_option("-o,--out", dra->out.path, "write to this file instead of stdout");
  r->add_option("--output", dra->out.path, "same as --out (older spelling)")->group("");
  r->callback([dra] {
    dra->cfg.kube_minor = parse_kube_minor(dra->kube_version, kDraMinKubeMinor, kDraMaxKubeMinor);
    write(dra->out, dra_config_yaml(dra->cfg));
  });
}

}  // namespace

void add_config_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("config", "print Kubernetes configuration (device plugin, MIG, descheduler, scheduler, DRA)");
  cmd->require_subcommand(1);
  add_sharing_subcommand(cmd);
  add_mig_subcommand(cmd);
  add_descheduler_subcommand(cmd);
  add_scheduler_subcommand(cmd);
  add_dra_subcommand(cmd);
}

}  // namespace gpupack::cli
