// Plan refinement for goal admit: drop the moves a plan's admissions do not
// need, then spend the moves saved on more planning, round after round.
//
// Why: the consolidation rounds (defrag/consolidate.h) lower fragmentation
// broadly and keep a round when it lets pending pods in; most of a round's
// moves let nothing in, yet they use the move cap. On openb (seed 42, 5% of
// the running pods) the planner's 418 moves admit 12.9 GPUs, and the
// admissions need only a fraction of those moves.
//
// Contract:
// - prune_plan() returns `plan` without every move it can drop: moves are
//   tried last first, and one is dropped when the plan without it still
//   applies step by step (each later move and admission still fits, from
//   where the earlier steps leave it); passes repeat until one drops
//   nothing, so every move left is needed. A parked move is dropped only
//   with its whole cycle (the steps up to its land, none of them an
//   admission); a land step alone never is. Admissions are kept, so the same
//   pods are admitted at the same places; the steps' measures and the budget
//   use are recomputed. Throws std::invalid_argument when `plan` does not
//   apply to `state`. O(passes x moves x steps) binds on one copy of `state`
//   (each try replays only the steps after the move, from a checkpoint).
// - refine_plan() prunes, then calls `replan` on the state after the pruned
//   plan, with the pods the plan moved or admitted marked immovable, the
//   pending pods it did not admit and the budget it leaves; appends that
//   plan and prunes again; repeats while a round admits more GPU milli, at
//   most `rounds` times. The result admits at least what `plan` admits and
//   passes validate_plan() against `state`, `goal` and `budget` when `plan`
//   does; its `algorithm` gains `suffix` when refinement changed it.
//   Goals other than admit, and gangs, return `plan` unchanged.
// - trim_to_value() applies an operator's cost-to-value rule: at most
//   `max_moves_per_gpu` moves per GPU admitted (moves / (admitted GPU milli
//   / 1000)). A plan within it, or a negative limit, is returned unchanged.
//   Otherwise each admission's support is found (the moves the plan keeps
//   when that admission alone is kept, prune_plan()); admissions are taken
//   by fewest support moves per GPU milli (plan order on ties), and each
//   joins when the plan with the admissions taken so far, pruned, stays
//   within the rule. Moves are shared by admissions, so the build-up finds
//   sets a tear-down would miss. Admissions kept stay where they were; the
//   result passes validate_plan() when `plan` does and may admit nothing
//   (then it moves nothing); its `algorithm` gains " + value trim". Goals
//   other than admit, and gangs, return `plan` unchanged. 2 x admissions
//   prunes.
// - None of them changes `state`. Deterministic when `replan` is.
#pragma once

#include <functional>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "model/cluster_state.h"

namespace gpupack {

using ReplanFn =
    std::function<DefragPlan(const ClusterState&, const DefragGoal&, const DefragBudget&, const PodMoveInfos&)>;

// Recomputes each step's measures (`after`), the plan's budget use, `before`,
// `after` and `not_admitted` by applying `plan` to a copy of `state`. Throws
// std::invalid_argument when a step does not apply.
void restamp_plan(const ClusterState& state, DefragPlan& plan, const DefragGoal& goal, const PodMoveInfos& infos);

DefragPlan prune_plan(const ClusterState& state, const DefragPlan& plan, const DefragGoal& goal,
                      const PodMoveInfos& infos);

DefragPlan refine_plan(const ClusterState& state, DefragPlan plan, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, const ReplanFn& replan, int rounds = 8,
                       const char* suffix = " + refinement");

DefragPlan trim_to_value(const ClusterState& state, DefragPlan plan, const DefragGoal& goal, const PodMoveInfos& infos,
                         double max_moves_per_gpu);

}  // namespace gpupack
