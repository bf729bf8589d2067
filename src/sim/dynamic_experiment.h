// The dynamic experiment: every (policy, seed) pair of a dynamic run, as the
// static experiment (sim/experiment.h) does for arrivals only.
//
// Contract:
// - run_dynamic_experiment() runs one run_dynamic() per policy and seed, in
//   that order (policy-major, seeds as given), and returns one result each.
//   A seed sets the node tie-break ranks (seeded_rank), the Random policy's
//   draws and, for a generated workload, the workload itself (the generator's
//   seed is replaced by the run's seed). An openb workload is the same for
//   every seed. The FGD target workload is built from the run's workload.
// - spec.node_rank, when given, replaces the seeded ranks (an exact replay).
// - Labels: "<policy><suffix>", plus " seed <n>" when there is more than one
//   seed.
// - Throws std::invalid_argument before running anything for an unknown
//   policy, no policy, no seed, or no workload. Deterministic; one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/node.h"
#include "sim/dynamic_report.h"
#include "sim/dynamic_sim.h"
#include "sim/dynamic_workload.h"

namespace gpupack {

struct DynamicExperimentSpec {
  std::vector<NodeSpec> nodes;
  std::optional<DynamicWorkload> workload;       // fixed (openb), or
  std::optional<GangWorkloadOptions> generated;  // generated per seed
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  DynamicOptions options;
  std::string label_suffix;  // e.g. "+backfill"
  // Node tie-break ranks for every run (one per node); empty = seeded_rank.
  std::vector<int64_t> node_rank;
};

struct DynamicExperimentRun {
  std::string policy;
  uint64_t seed = 0;
  std::string label;
  DynamicRunResult result;
  DynamicSummary summary;
  size_t jobs = 0;
  std::vector<std::vector<std::string>> member_names;  // per job, per member (the workload's, or "<job>-<i>")
};

std::vector<DynamicExperimentRun> run_dynamic_experiment(
    const DynamicExperimentSpec& spec, const std::function<void(const DynamicExperimentRun&)>& done = {});

}  // namespace gpupack
