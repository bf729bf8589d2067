// A defrag plan: ordered steps, each valid when applied in order.
//
// Contract:
// - A step moves one running pod from `from` to `to` (kind remap, migrate or
//   evict) or admits a pending pod at `to` (kind admit, `from.node` kNoNode).
//   `after` holds the cluster measures once the step is applied (admitted
//   counts include this step).
// - Parked moves (swaps): a move with `parked` set only takes the pod off
//   `from` (evicted; its replacement waits); the pod lands at `to` at a later
//   step of kind land for the same pod, once the moves between the two have
//   freed `to`. The steps from a park to its land form one cycle (pods
//   trading places, none of whose moves fits before another has left); a
//   parked pod is down for the whole cycle. Every park has exactly one land.
// - `apply_plan()` applies the steps to `state` in order through
//   unbind/bind; it checks each step (pod bound at `from`, the bind fits) and
//   on the first failure rolls back everything and throws
//   std::invalid_argument naming the step. O(steps) binds.
// - `validate_plan()` applies the plan to a copy and returns every rule it
//   breaks (empty = valid): a step's `from` must be the pod's assignment at
//   that point, no step over-allocates, no immovable pod moves, admitted pods
//   are pending and unbound, the budget (moves, moved GPU milli, cost,
//   group max-unavailable) holds, recorded measures match after every step,
//   and the state's invariants hold after the plan. O(nodes + pods + steps)
//   (each step's measures are updated on the two nodes it touches).
#pragma once

#include <string>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"

namespace gpupack {

struct PlanStep {
  MoveKind kind = MoveKind::kEvict;
  PodId pod{};
  Request request;
  Assignment from;  // node kNoNode for kAdmit
  Assignment to;
  double cost = 0;
  ClusterMeasures after;
  bool parked = false;  // a move: the pod leaves here and lands at its kLand step
};

struct DefragPlan {
  std::string algorithm;
  GoalKind goal = GoalKind::kAdmitPending;
  std::vector<PlanStep> steps;
  ClusterMeasures before;
  ClusterMeasures after;
  BudgetUse use;
  std::vector<PodId> not_admitted;  // pending pods the plan could not place
  double plan_seconds = 0;

  int moves() const { return use.moves; }
};

void apply_plan(ClusterState& state, const DefragPlan& plan);
// Applies one step (the checks of apply_plan()); returns what is wrong, or ""
// when applied. On an error the state may hold the step half done (the pod
// unbound): callers roll back to a checkpoint.
std::string apply_step(ClusterState& state, const PlanStep& step);

std::vector<std::string> validate_plan(const ClusterState& state, const DefragPlan& plan, const DefragGoal& goal,
                                       const DefragBudget& budget, const PodMoveInfos& infos);

}  // namespace gpupack
