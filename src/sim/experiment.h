// A static-arrival experiment over several policies and seeds.
//
// Contract: run_experiment() runs one job per (policy, seed) on up to
// `threads` worker threads (0 = all cores), each on its own ClusterState and
// policy instance, and returns results ordered by (policy, seed) as given.
// The FGD target workload (and the fragmentation recorded for every policy)
// is built from the whole trace. Without a fixed order, each seed samples its
// own arrivals; without a node rank, each seed uses a seeded permutation of
// the nodes as tie-break. Throws std::invalid_argument on an unknown policy
// or an empty cluster before any job starts.
// With `defrag`, every run defragments after its arrivals and retries its
// failed pods (sim/static_defrag.h); the outcome is in StaticRunResult::defrag.
// Job j is (policy j / seeds, seed j % seeds).
// With `save_state_path`, the first job (first policy, first seed) writes its
// state after the arrivals as a gpupack-state/v1 snapshot (defrag/snapshot.h;
// failed arrivals as pending pods), before any defragmentation.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/workload.h"
#include "sim/static_experiment.h"

namespace gpupack {

struct ExperimentSpec {
  std::vector<NodeSpec> nodes;
  Workload trace;  // sorted by name
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  double tune = 1.3;
  std::optional<std::vector<int32_t>> fixed_order;  // indices into trace
  std::optional<std::vector<int64_t>> node_rank;    // per node, lower wins
  int threads = 0;
  std::optional<StaticDefragSpec> defrag;
  std::string save_state_path;
  // Called for every job with its state after the arrivals (before any
  // defragmentation) and the arrivals' pod names (PodId i = arrival i), from
  // the worker threads (it must be thread-safe).
  std::function<void(size_t job, const ClusterState& state, std::span<const std::string> pod_names)> on_final_state;
};

struct ExperimentProgress {
  size_t jobs_done = 0;
  size_t jobs_total = 0;
  size_t arrivals_done = 0;   // over all jobs
  size_t arrivals_total = 0;  // over all jobs
};

std::vector<StaticRunResult> run_experiment(const ExperimentSpec& spec,
                                            const std::function<void(const ExperimentProgress&)>& progress = {});

}  // namespace gpupack
