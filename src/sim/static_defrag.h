// Defragmentation at the end of a static-arrival run.
//
// Contract: defrag_after_arrivals() takes the state left by the arrivals
// (failed arrivals are not bound; arrival i is PodId i), a budget of
// `budget_fraction` x running pods moved (rounded down), and
// - method "planner": plans with defrag/planner.h (goal: admit the failed
//   pods) and applies the plan;
// - method "high-node-utilization" / "low-node-utilization": the
//   descheduler-style baselines (defrag/descheduler.h) with the run's policy;
// then retries every still-failed pod, in arrival order, with the run's
// policy and node rank. It reports GPU allocation before and after, the moves
// used, pods admitted and whole free GPUs / free nodes before and after. The
// state is changed in place. Throws std::invalid_argument on an unknown
// method or a fraction outside [0, 1].
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "policy/policy.h"

namespace gpupack {

struct StaticDefragSpec {
  double budget_fraction = 0.05;   // of running pods
  std::string method = "planner";  // a name from defrag_method_table()
  double time_limit_s = 0;         // planner search limit; 0 = none
};

struct StaticDefragResult {
  std::string method;
  int running_pods = 0;  // bound when the arrivals ended
  int max_moves = 0;
  int moves = 0;
  int failed_pods = 0;    // before defragmentation
  int admitted_pods = 0;  // by the plan and the retry
  double alloc_pct_before = 0;
  double alloc_pct_after = 0;
  int free_gpus_before = 0, free_gpus_after = 0;
  int free_nodes_before = 0, free_nodes_after = 0;
  double plan_seconds = 0;
};

StaticDefragResult defrag_after_arrivals(ClusterState& state, std::span<const Request> arrivals,
                                         std::span<const Assignment> placements, Policy& policy,
                                         std::span<const int64_t> node_rank, const StaticDefragSpec& spec);

}  // namespace gpupack
