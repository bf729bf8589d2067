// Exact defrag formulation (mixed-integer program solved with GLPK), for
// small clusters: tests use it to measure the greedy planner's gap.
//
// Contract:
// - solve_defrag_ilp() finds the best final placement of every bound pod
//   (and of the pending pods it admits) reachable within the budget's move
//   count, moved-GPU and cost limits and group max-unavailable, never moving
//   an immovable pod. Goals: admit (maximise admitted GPU milli; gang = all
//   or none) and free-gpus (maximise whole free GPUs); other goals throw
//   std::invalid_argument. A pod counts as moved when any of its GPUs (or,
//   CPU-only, its node) changes. Ties prefer fewer moves.
// - `order_safe` false models the end state only: it ignores the order of
//   moves, so its optimum bounds every ordered plan from above, but a swap it
//   returns may need an intermediate spot that does not exist.
//   `order_safe` true (default) also requires every move to fit while all
//   moved pods still hold their old places (moves into space that was free
//   before the plan): its plans are valid in any order, but it cannot use
//   chains (a move into space another move frees), which the greedy can.
// - Variables: one binary per (pod, node, GPU) and (pod, node), so the model
//   grows as pods x GPUs; `time_limit_s` bounds GLPK's branch and bound.
//   `optimal` is false when the limit stopped it (the objective is then the
//   best found). Not thread-safe (GLPK keeps global state).
#pragma once

#include <utility>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"

namespace gpupack {

struct IlpResult {
  bool solved = false;   // a feasible solution was found
  bool optimal = false;  // proven optimal
  double objective = 0;  // admitted GPU milli, or whole free GPUs
  int moves = 0;
  std::vector<PodId> admitted;
  // Where the solution puts every bound pod it moves and every pending pod
  // it admits (node, GPUs, the request's per-GPU share).
  std::vector<std::pair<PodId, Assignment>> placed;
  double seconds = 0;
};

IlpResult solve_defrag_ilp(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                           const PodMoveInfos& infos, double time_limit_s = 10, bool order_safe = true);

}  // namespace gpupack
