// Consolidate first, then plan: the planner's second candidate plan for
// goal admit. Rounds of fragmentation-lowering moves (frag-multi-pod,
// defrag/frag_descheduler.h) are kept only when the pending pods they let in
// pay for them; then plan_defrag() spends what is left of the budget.
//
// Contract:
// - plan_consolidate_first() starts from no steps. A round is the
//   frag-multi-pod plan over the state after the steps so far, moving no pod
//   an earlier step moved or admitted, at the smallest of the caps
//   kMinRoundMoves, 2 x, 4 x, ... (up to the moves left) that admits the
//   most pending GPU milli (the rule's moves do not depend on its cap: a
//   smaller cap is a prefix). A round that admits nothing, or after which
//   the plan would fail validate_plan() (budget and groups included), ends
//   the rounds. Then plan_defrag(), with `options`, plans the pods still
//   pending with the moves left; its steps are kept when the whole plan
//   stays valid.
// - options.time_limit_s (> 0) bounds this plan's own search (the rounds
//   stop, the greedy gets what is left); the planner method gives the greedy
//   alone the same limit again.
// - Goal admit without gang only; for any other goal it returns an empty
//   plan (no steps, every pending pod not admitted).
// - Every step is valid in order; `state` is not changed. O(rounds x log
//   budget) frag-multi-pod plans, one plan_defrag(), one validate_plan() per
//   round.
#pragma once

#include <span>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "defrag/planner.h"
#include "policy/policy.h"

namespace gpupack {

constexpr int kMinRoundMoves = 16;

DefragPlan plan_consolidate_first(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                  const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                                  const PlannerOptions& options);

}  // namespace gpupack
