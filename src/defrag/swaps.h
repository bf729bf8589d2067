// Swaps: pending pods admitted by two running pods trading GPUs.
//
// Why: on openb the greedy planner (defrag/planner.h) leaves nodes with spare
// CPU whose GPU holes are a little too small for the pending pods, and nodes
// with GPU holes but no CPU left. A pod `a` on the first kind of node and a
// smaller pod `b` on the second can trade places: the GPU hole moves to where
// the CPU is, and a pending pod fits. Neither move fits while the other pod
// is still there, so no step-by-step plan of plain moves can do it; the plan
// parks `a` (evicted, its replacement waiting) while `b` moves into a's GPU.
// On seed 42 of openb an exact search on small neighbourhoods found that
// almost every admission the planner leaves is of this kind.
//
// A trade also frees CPU and memory: where a pending pod's GPU room is on a
// node without the cores or memory it asks, a pod there trades GPUs with one
// elsewhere that asks less of them (on openb after FGD, a dozen whole free
// GPUs sit on nodes with under a core free).
//
// Contract:
// - plan_swaps() admits pending pods of goal admit (not gangs), each by one
//   swap: steps "park a" (a move with `parked`), "move b into a's GPU", "land
//   a on b's GPU", "admit p" (defrag/plan.h; plain moves in an order that
//   fits when one does). Pending pods are taken largest GPU share first;
//   single-GPU plain pending pods and single-GPU plain movable pods on nodes
//   without a hardware setup take part. For a pending pod, nodes are tried
//   in index order and the first swap that applies is taken. GPU trade (p a
//   GPU share): `a` on a GPU of a node that could host p but for the GPU
//   share (`a` large enough to make room), `b` smaller, on a GPU where `a`
//   fits once `b` left; p goes where `a` was. CPU trade (p's GPU has room,
//   the node lacks CPU or memory): `a` on another GPU of that node, `b` on
//   another node asking at least p's shortfall less CPU and memory, each
//   fitting the other's GPU once it left; p goes on the GPU with room. CPU,
//   memory and GPU models checked for all three pods, then the steps applied
//   to a copy.
// - Each swap costs 2 moves (`b` may be a remap on the same node); the plan
//   stays within `budget` (moves, moved GPU milli, cost, group limits) and
//   never moves an immovable pod or a pod twice. It passes validate_plan().
// - `time_limit_s` (> 0) stops the search early with what it has.
// - O(pending shapes x candidate nodes x GPUs x pods per GPU x candidates
//   per size), with one index of the movable pods by GPU share rebuilt after
//   each swap. `state` is not changed; deterministic.
#pragma once

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "model/cluster_state.h"

namespace gpupack {

DefragPlan plan_swaps(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                      const PodMoveInfos& infos, double time_limit_s = 0);

}  // namespace gpupack
