// Defragmentation methods by name, as the CLI and the simulator offer them.
//
// Contract: defrag_method_table() is the one list of methods (name, one-line
// summary, planning function); help texts, `gpupack policies`, name checks
// and tests derive from it. plan_by_method() plans with "planner"
// (plan_defrag() with `planner`; for goal admit under a move cap, unless
// `planner.consolidate` is off, plan_consolidate_first() too, keeping the
// plan that admits more GPU milli, the first on a tie), "high-node-utilization" or
// "low-node-utilization" (plan_descheduler() with default thresholds,
// re-placing with `policy` and `node_rank`), or "frag-one-pod",
// "frag-multi-pod" and "cos-sim" (plan_frag_descheduler(), the FGD
// simulator's deschedule rules). With `planner.max_moves_per_gpu` >= 0 the
// method's plan then goes through trim_to_value() (defrag/refine.h), whatever
// the method; "planner" under a move cap first trims three plans (its own,
// plan_defrag()'s alone, and its own for the cap the rule allows for what
// its plan admits) and keeps the one that admits the most GPU milli (fewer
// moves on ties). It does not change `state`;
// apply the plan with apply_plan(). The plan's plan_seconds is the method's
// wall time. With `planner.threads` > 1 "planner" runs its two pipelines on
// two threads (`policy` is used on the calling thread only); the plan is the
// same. An unknown name throws std::invalid_argument listing the known ones.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "defrag/consolidate.h"
#include "defrag/descheduler.h"
#include "defrag/frag_descheduler.h"
#include "defrag/planner.h"

namespace gpupack {

using DefragMethodFn =
    std::function<DefragPlan(const ClusterState&, const DefragGoal&, const DefragBudget&, const PodMoveInfos&, Policy&,
                             std::span<const int64_t>, const PlannerOptions&)>;

struct DefragMethodInfo {
  std::string name;
  std::string summary;
  DefragMethodFn plan;
};

const std::vector<DefragMethodInfo>& defrag_method_table();
std::vector<std::string> defrag_method_names();
// "a, b or c": the names for help and error texts.
std::string defrag_method_name_list();
// Throws std::invalid_argument naming the known methods when `method` is not one.
void check_defrag_method(std::string_view method);

DefragPlan plan_by_method(std::string_view method, const ClusterState& state, const DefragGoal& goal,
                          const DefragBudget& budget, const PodMoveInfos& infos, Policy& policy,
                          std::span<const int64_t> node_rank, const PlannerOptions& planner = {});

}  // namespace gpupack
