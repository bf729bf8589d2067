// Chains: pending pods admitted by a pod leaving along a chain of moves.
//
// Why: after the greedy and the swaps (defrag/swaps.h) on openb, the GPU holes
// left are nearly all under 200 milli while the pending pods ask 220 or more.
// A pod `a` on a GPU that would take a pending pod `p` once `a` left cannot
// move anywhere: no hole is large enough. It can move into the hole of a GPU
// whose pod `b1` leaves first, and `b1` (smaller than `a` by at most that
// hole) into the hole of a GPU whose `b2` leaves first, and so on until a pod
// fits a hole as it is. Each link spreads `a`'s share over one more hole: a
// chain of k moves merges k holes into p's GPU. The greedy planner searches
// chains of two moves, the swaps merge one hole for two moves; on openb
// (5% of the running pods, seeds 42-51) the chains and cycles admit 2.5 to
// 10.9% more GPU milli after both (6.8% on the mean).
//
// A cycle is a chain whose last pod moves into the pending pod's GPU itself
// (what `a` leaves there beyond p's need): `a` is parked until the others
// have moved. A swap (defrag/swaps.h) is the cycle of two.
//
// Contract:
// - plan_chains() admits pending pods of goal admit (not gangs), each by one
//   chain or cycle of 2 to `max_length` moves, then "admit p". The search
//   deepens from `min_length` (at least 2) moves: a search of depth L finds
//   chains of at most L moves, and starts only with L moves left in the
//   budget. (The planner's second pass, depths 5 and 6, runs after the
//   first, depths 2 to 4, for what that one left.) A chain runs its last link first, so each plain move fits when it
//   runs; a cycle parks `a` (defrag/plan.h), moves the others last first and
//   lands `a`. Pending pods are taken largest GPU share first; single-GPU
//   plain pending pods and single-GPU plain movable pods on nodes without a
//   hardware setup take part. Starts are pods `a` whose leaving makes room
//   on their GPU (shared pending pods only: a chain leaves a pod on the GPU),
//   on a node with CPU and memory for p once `a` left; or, where p's GPU has
//   room but its node lacks CPU or memory, a pod on another GPU of that node
//   asking at least what p lacks (its cycle closes on its own GPU). Starts
//   are tried fewest milli short first. At each link a pod goes into the
//   tightest hole that takes it as it is, or back to where the cycle closes
//   when it fits there, or else into a hole it
//   does not fit with a smaller pod there leaving first: the smallest such
//   pods first, at most 3 per link. CPU, memory and GPU models are checked
//   at every node a link touches, and the whole chain is applied to a copy
//   before it is taken. A shape that found nothing is not tried again.
// - Each link costs a move (a park counts, its land does not); the plan stays
//   within `budget` and never moves an immovable pod or a pod twice. It
//   passes validate_plan().
// - `time_limit_s` (> 0) stops the search early with what it has.
// - O(pending shapes x starts x 3^(max_length - 1) links); a failed link is
//   remembered per pod shape with the room it had to close a cycle, and one
//   index of holes and movable pods is rebuilt after each chain. `state` is
//   not changed; deterministic.
#pragma once

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "model/cluster_state.h"

namespace gpupack {

DefragPlan plan_chains(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, int max_length = 4, double time_limit_s = 0, int min_length = 2);

}  // namespace gpupack
