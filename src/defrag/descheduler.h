// Descheduler-style baselines: evict by GPU utilisation thresholds and let
// the active policy re-place the pods, as the Kubernetes descheduler's
// LowNodeUtilization / HighNodeUtilization strategies do.
//
// Contract:
// - A node's GPU utilisation is used / capacity of its GPUs, in %. Nodes
//   without GPUs are ignored.
// - HighNodeUtilization (bin packing): nodes with 0 < utilisation < low_pct
//   are drained, emptiest first; each evicted pod (smallest GPU request
//   first) is re-placed by `policy` on any other node; a pod that fits on no
//   other node is left where it is (the descheduler's node-fit check).
// - LowNodeUtilization (spreading): from nodes above high_pct, fullest first,
//   pods (smallest first) are evicted while the node stays above high_pct and
//   re-placed by `policy` on nodes below low_pct.
// - Then every pending pod of `goal` (in the given order) is offered to
//   `policy` over all nodes and admitted where it fits.
// - Moves never exceed `budget`; immovable pods never move; each pod moves at
//   most once. The plan is valid in order (validate_plan() holds).
//   O(moves x nodes) policy scores. `state` is not changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "policy/policy.h"

namespace gpupack {

enum class DeschedulerStrategy { kLowNodeUtilization, kHighNodeUtilization };

struct DeschedulerOptions {
  DeschedulerStrategy strategy = DeschedulerStrategy::kHighNodeUtilization;
  double low_pct = 20;
  double high_pct = 80;
};

DefragPlan plan_descheduler(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                            const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                            const DeschedulerOptions& options);

// The scheduler's decision (Scheduler::decide) restricted to nodes whose
// mask byte is non-zero (empty = every node): filter, policy score (min-max
// normalised when the policy asks), highest score, ties to the lowest rank
// (node index when `node_rank` is empty).
std::optional<Assignment> policy_place(const ClusterState& state, Policy& policy, std::span<const int64_t> node_rank,
                                       const Request& req, std::span<const uint8_t> mask = {});

// The same with a predicate over nodes.
template <class Allowed>
std::optional<Assignment> policy_place(const ClusterState& state, Policy& policy, std::span<const int64_t> node_rank,
                                       const Request& req, Allowed allowed) {
  std::vector<uint8_t> mask(static_cast<size_t>(state.node_count()));
  for (int i = 0; i < state.node_count(); ++i) mask[static_cast<size_t>(i)] = allowed(NodeId{i}) ? 1 : 0;
  return policy_place(state, policy, node_rank, req, std::span<const uint8_t>(mask));
}

// The bookkeeping the baselines share (this file's and frag_descheduler.h's):
// a plan recorded as it is made on a working copy of the state. record()
// stamps a step, already applied to `state`, with the measures after it and
// the pods and GPU milli admitted so far; admit_pending() offers the goal's
// pending pods to `policy` over all nodes, in order, and records each one
// admitted or lists it in not_admitted; finish() names the plan and sets
// `after` and the planning time. `state` and `goal` must outlive it.
class BaselineRecorder {
 public:
  BaselineRecorder(ClusterState& state, const DefragGoal& goal);
  DefragPlan& plan() { return plan_; }
  const DefragPlan& plan() const { return plan_; }
  void record(PlanStep step);
  void admit_pending(Policy& policy, std::span<const int64_t> node_rank);
  DefragPlan finish(std::string algorithm, std::chrono::steady_clock::time_point start);

 private:
  ClusterState& s_;
  const DefragGoal& goal_;
  MeasureTracker tracker_;
  DefragPlan plan_;
  int admitted_ = 0;
  int64_t admitted_milli_ = 0;
};

}  // namespace gpupack
