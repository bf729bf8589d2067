// gpupack hw-experiment: the seeded 100-node A100-80GB experiment comparing
// the naive first-free MIG slot choice with the MIG-aware one, in MIG, MPS
// and mixed cluster modes; prints a markdown table.
#include <fmt/format.h>

#include "cli/commands.h"
#include "sim/hw_experiment.h"

namespace gpupack::cli {

void add_hw_experiment_command(CLI::App& app) {
  auto opt = std::make_shared<HwExperimentOptions>();
  auto* cmd =
      app.add_subcommand("hw-experiment", "MIG slot choice experiment: first-free vs MIG-aware on A100-80GB nodes");
  cmd->add_option("--nodes", opt->node_count, "nodes of 8 x A100-80GB")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--pods", opt->pod_count, "pods in the workload")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--seed", opt->seed, "workload seed")->capture_default_str();
  cmd->add_option("--policy", opt->node_policy, "node policy")->capture_default_str();
  cmd->callback([opt] {
    std::vector<HwRunResult> runs;
    for (const HwClusterMode m : {HwClusterMode::kMig, HwClusterMode::kMps, HwClusterMode::kMixed})
      for (const MigSlotRule r : {MigSlotRule::kFirstFree, MigSlotRule::kMigAware})
        runs.push_back(run_hw_experiment(m, r, *opt));
    fmt::print("{}", format_hw_results(runs));
  });
}

}  // namespace gpupack::cli
