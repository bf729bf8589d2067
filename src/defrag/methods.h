// Defragmentation methods by name, as the CLI and the simulator offer them.
//
// Contract: plan_by_method() plans with "planner" (plan_defrag() with
// `planner`), "high-node-utilization" or "low-node-utilization"
// (plan_descheduler() with default thresholds, re-placing with `policy`
// and `node_rank`). It does not change `state`; apply the plan with
// apply_plan(). An unknown name throws std::invalid_argument listing the
// known ones.
#pragma once

#include <span>
#include <string_view>

#include "defrag/descheduler.h"
#include "defrag/planner.h"

namespace gpupack {

DefragPlan plan_by_method(std::string_view method, const ClusterState& state, const DefragGoal& goal,
                          const DefragBudget& budget, const PodMoveInfos& infos, Policy& policy,
                          std::span<const int64_t> node_rank, const PlannerOptions& planner = {});

}  // namespace gpupack
