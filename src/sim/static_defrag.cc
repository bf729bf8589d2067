#include "sim/static_defrag.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "defrag/methods.h"

namespace gpupack {

StaticDefragResult defrag_after_arrivals(ClusterState& state, std::span<const Request> arrivals,
                                         std::span<const Assignment> placements, Policy& policy,
                                         std::span<const int64_t> node_rank, const StaticDefragSpec& spec) {
  if (!(spec.budget_fraction >= 0 && spec.budget_fraction <= 1))
    throw std::invalid_argument(fmt::format("defrag budget fraction {} is outside [0, 1]", spec.budget_fraction));
  StaticDefragResult r;
  r.method = spec.method;
  r.running_pods = state.bound_pod_count();
  r.max_moves = static_cast<int>(std::floor(spec.budget_fraction * r.running_pods + 1e-9));
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  r.alloc_pct_before = capacity > 0 ? 100.0 * static_cast<double>(state.gpu_used_milli()) / capacity : 0;

  DefragGoal goal;
  goal.kind = GoalKind::kAdmitPending;
  for (size_t i = 0; i < placements.size() && i < arrivals.size(); ++i)
    if (!valid(placements[i].node)) goal.pending.push_back({PodId{static_cast<int32_t>(i)}, arrivals[i]});
  r.failed_pods = static_cast<int>(goal.pending.size());
  DefragBudget budget;
  budget.max_moves = r.max_moves;
  const PodMoveInfos infos;  // defaults: every pod movable at cost 1

  const ClusterMeasures before = measure_cluster(state, nullptr);
  r.free_gpus_before = before.free_gpus;
  r.free_nodes_before = before.free_nodes;

  PlannerOptions opt;
  opt.time_limit_s = spec.time_limit_s;
  const DefragPlan plan = plan_by_method(spec.method, state, goal, budget, infos, policy, node_rank, opt);
  apply_plan(state, plan);
  r.moves = plan.moves();
  r.plan_seconds = plan.plan_seconds;
  r.admitted_pods = plan.steps.empty() ? 0 : plan.steps.back().after.admitted_pods;

  // Retry whatever is still pending with the run's own policy.
  for (PodId id : plan.not_admitted) {
    const Request& req = arrivals[index(id)];
    auto to = policy_place(state, policy, node_rank, req, [](NodeId) { return true; });
    if (to && state.bind(id, req, *to).is_ok()) ++r.admitted_pods;
  }
  state.commit();
  const ClusterMeasures after = measure_cluster(state, nullptr);
  r.free_gpus_after = after.free_gpus;
  r.free_nodes_after = after.free_nodes;
  r.alloc_pct_after = capacity > 0 ? 100.0 * static_cast<double>(state.gpu_used_milli()) / capacity : 0;
  return r;
}

}  // namespace gpupack
