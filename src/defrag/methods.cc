#include "defrag/methods.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpupack {

DefragPlan plan_by_method(std::string_view method, const ClusterState& state, const DefragGoal& goal,
                          const DefragBudget& budget, const PodMoveInfos& infos, Policy& policy,
                          std::span<const int64_t> node_rank, const PlannerOptions& planner) {
  if (method == "planner") return plan_defrag(state, goal, budget, infos, planner);
  if (method == "high-node-utilization" || method == "low-node-utilization") {
    DeschedulerOptions opt;
    opt.strategy = method == "high-node-utilization" ? DeschedulerStrategy::kHighNodeUtilization
                                                     : DeschedulerStrategy::kLowNodeUtilization;
    return plan_descheduler(state, goal, budget, infos, policy, node_rank, opt);
  }
  throw std::invalid_argument(fmt::format(
      "unknown defrag method '{}' (known: planner, high-node-utilization, low-node-utilization)", method));
}

}  // namespace gpupack
