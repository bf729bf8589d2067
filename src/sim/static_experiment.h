// The FGD paper's static-arrival experiment.
//
// Contract:
// - sample_static_arrivals(): the arrival list for one seed, as indices into
//   the name-sorted trace: all trace pods shuffled, then tuned to `tune` x
//   cluster GPU capacity by appending uniformly drawn copies (stopping at the
//   first draw whose per-GPU milli would overshoot) or removing random pods.
//   Deterministic in (trace, capacity, tune, seed).
// - run_static(): schedules the arrivals one at a time on a fresh cluster,
//   never removing a pod; a pod that fits nowhere fails and is dropped. After
//   each arrival it records arrived milli (failed pods included), allocated
//   milli and the cluster's FGD fragmentation. O(arrivals x nodes) filter
//   checks plus the policy's scoring cost. When given, `after_arrivals` is
//   called once after the last arrival with the final state and the result
//   so far (sim/static_defrag.h uses it to defragment and retry failed pods;
//   it may change the state but not the recorded steps).
// - placed_size_waste_milli(): the GPU milli that the sizes of the pods
//   placed (placements[i] set) leave free however they are packed
//   (frag/packing_prices.h: packing_waste_milli; one fluid packing LP, about
//   1 ms on openb); nullopt when an arrival's GPU use is not its milli alone
//   (gpu_use_is_milli). run_experiment() sets size_waste_milli with it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "model/node.h"
#include "model/request.h"
#include "policy/policy.h"
#include "sim/static_defrag.h"

namespace gpupack {

std::vector<int32_t> sample_static_arrivals(std::span<const Request> sorted_trace, int64_t capacity_milli, double tune,
                                            uint64_t seed);

struct StaticStep {
  int64_t arrived_milli = 0;
  int64_t used_milli = 0;
  double frag_milli = 0;
};

struct StaticRunResult {
  std::string policy;
  uint64_t seed = 0;
  int64_t capacity_milli = 0;
  std::vector<StaticStep> steps;       // one per arrival
  std::vector<Assignment> placements;  // one per arrival; node kNoNode = failed
  int failed_pods = 0;
  double wall_seconds = 0;
  std::optional<StaticDefragResult> defrag;  // set when the run defragmented after its arrivals
  // placed_size_waste_milli() of the run (set by run_experiment, not by
  // run_static): the rest of the free milli is what the placement left.
  std::optional<double> size_waste_milli;

  double final_alloc_pct() const;
};

// `progress(done)` (optional) is called every few hundred arrivals.
StaticRunResult run_static(const std::vector<NodeSpec>& nodes, std::span<const Request> arrivals, Policy& policy,
                           std::vector<int64_t> node_rank, const TargetWorkload& frag_target,
                           const std::function<void(size_t)>& progress = {},
                           const std::function<void(ClusterState&, StaticRunResult&)>& after_arrivals = {});

std::optional<double> placed_size_waste_milli(std::span<const Request> arrivals,
                                              std::span<const Assignment> placements);

}  // namespace gpupack
