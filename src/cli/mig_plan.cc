// gpupack mig-plan: read a cluster YAML and a MIG demand file, plan new MIG
// layouts for idle GPUs (fewest GPUs changed), print the plan and write the
// nvidia-mig-parted config and the nvidia.com/mig.config node labels.
#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "cli/commands.h"
#include "io/hw_input.h"
#include "mig/repartition.h"

namespace gpupack::cli {
namespace {

struct MigPlanFlags {
  std::string cluster, demand, config_out, labels_out;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write", path));
  out << text;
}

void run_mig_plan(const MigPlanFlags& f) {
  const HwCluster cluster = read_hw_cluster(f.cluster);
  const MigDemand demand = read_mig_demand(f.demand);
  const auto inventory = mig_inventory(cluster);
  if (inventory.empty()) throw std::invalid_argument(fmt::format("{}: no MIG-capable GPUs", f.cluster));
  const MigRepartitionPlan plan = plan_mig_repartition(inventory, demand);
  const auto& catalog = GpuCatalog::builtin();
  fmt::print("method: {}; GPUs changed: {}\n", plan.method, plan.changed_gpus);
  for (const auto& [label, d] :
       {std::pair{"unmet before", &plan.unmet_before}, std::pair{"unmet after", &plan.unmet_after}}) {
    std::string text;
    for (const auto& [model, counts] : *d)
      for (const auto& [profile, n] : counts)
        if (n > 0) text += fmt::format("{}{} {} x{}", text.empty() ? "" : ", ", catalog.spec(model).name, profile, n);
    fmt::print("{}: {}\n", label, text.empty() ? "none" : text);
  }
  for (size_t k = 0; k < plan.gpus.size(); ++k) {
    const MigGpuPlan& g = plan.gpus[k];
    if (g.on_demand) {
      fmt::print("  {} GPU {} (dynamic MIG): {} as pods arrive, no reconfiguration\n", g.node, g.gpu_index,
                 format_layout(g.after));
    } else if (g.changed) {
      // A whole GPU switched to MIG says so: that needs the GPU idle and a reset.
      fmt::print("  {} GPU {}: {} -> {}\n", g.node, g.gpu_index,
                 inventory[k].mig_enabled ? format_layout(g.before) : std::string("MIG off (whole GPU)"),
                 format_layout(g.after));
    }
  }
  std::string labels;
  for (const auto& [node, value] : plan.node_labels) labels += fmt::format("{}: {}={}\n", node, kMigConfigLabel, value);
  if (!f.config_out.empty()) write_file(f.config_out, plan.config_yaml());
  if (!f.labels_out.empty()) write_file(f.labels_out, labels);
  if (f.config_out.empty() && plan.changed_gpus > 0) fmt::print("--- mig-parted config ---\n{}", plan.config_yaml());
  if (f.labels_out.empty() && !labels.empty()) fmt::print("--- node labels ---\n{}", labels);
}

}  // namespace

void add_mig_plan_command(CLI::App& app) {
  auto flags = std::make_shared<MigPlanFlags>();
  auto* cmd =
      app.add_subcommand("mig-plan", "plan MIG repartitioning of idle GPUs for a demand (mig-parted config + labels)");
  cmd->add_option("--cluster", flags->cluster, "cluster YAML (node pools with MIG layouts)")->required();
  cmd->add_option("--demand", flags->demand, "demand YAML: demand: {MODEL: {PROFILE: COUNT}}")->required();
  cmd->add_option("-o,--out", flags->config_out, "write the nvidia-mig-parted config (v1) here");
  cmd->add_option("--config-out", flags->config_out, "same as --out (older spelling)")->group("");
  cmd->add_option("--labels-out", flags->labels_out, "write 'node: nvidia.com/mig.config=NAME' lines here");
  cmd->callback([flags] { run_mig_plan(*flags); });
}

}  // namespace gpupack::cli
