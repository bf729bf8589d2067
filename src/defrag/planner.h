// The defrag planner: greedy what-if search for large clusters.
//
// Contract:
// - plan_defrag() never changes `state`: it works on a copy, trying every
//   candidate with ClusterState::checkpoint()/rollback(), and returns a plan
//   whose steps are valid when applied in order (validate_plan() holds),
//   within `budget`, never moving an immovable pod and never moving a pod
//   twice (a pod moved or admitted by the plan is not touched again).
// - Goal admit: each pending pod is admitted where it needs the cheapest
//   moves. For a node, the pods to displace are the cheapest per GPU (all
//   pods on a GPU for whole-GPU requests, the largest few for shared ones),
//   plus pods that must leave the node to free CPU or memory. The pending
//   pod is bound first (a reservation), then every displaced pod is re-placed
//   by tight fit anywhere else (another GPU of the same node = remap). Pods
//   are taken in passes of falling gain per move cost (GPU milli admitted
//   per unit cost: free admissions first, then >= 2000, 1000, 500, 250, any),
//   largest pods first within a pass. Then a local search repeats the passes
//   allowing two-level chains: a displaced pod that fits nowhere may displace
//   one pod from another node where it then fits, that pod being re-placed
//   anywhere else (the cleared node included, making a swap); this second
//   search tries at most `max_chain_tries` candidates (it is the costly part).
// - Goals free-gpus / free-nodes: evacuate the cheapest GPU (only shared pods)
//   or node (every pod movable) whose pods fit elsewhere without using a
//   whole free GPU (resp. an empty node), repeatedly, within the budget.
// - Goal frag: like free-gpus, choosing each round among the 24 cheapest
//   feasible evacuations (of the 128 cheapest) the one that lowers FGD fragmentation most per unit cost,
//   until fragmentation <= threshold or nothing lowers it.
// - Gang admit goals return a plan only when every pending pod is admitted.
// - Complexity: O(rounds x pending x nodes) cached node evaluations plus
//   O(nodes x GPUs) per re-placed pod; `time_limit_s` (> 0) stops the search
//   early and returns what it has. Single-threaded; no shared state.
//
// plan_and_apply(): plan_defrag() then apply_plan() on `state`. The dynamic
// simulator calls it every N minutes with its running state, pending queue
// and budget; the returned plan tells it what moved and what was admitted.
#pragma once

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "model/cluster_state.h"

namespace gpupack {

struct PlannerOptions {
  bool local_search = true;
  int candidates_per_pod = 16;  // what-ifs tried per pending pod and pass
  double time_limit_s = 0;      // 0 = no limit
  int max_chain_tries = 300;    // what-ifs of the chained (second) search
  // plan_by_method("planner") only: also plan consolidation first
  // (defrag/consolidate.h) and keep what admits more; plan_defrag() itself
  // ignores it.
  bool consolidate = true;
  // plan_by_method("planner") only, goal admit under a move cap: drop the
  // moves the admissions do not need and plan again with the moves saved
  // (defrag/refine.h); plan_defrag() itself ignores it.
  bool refine = true;
  // plan_by_method("planner") only, goal admit without gang under a move
  // cap: after refinement, admit more by pods trading GPUs with the moves
  // left (defrag/swaps.h; plans may park a pod while another moves).
  bool swaps = true;
  // plan_by_method("planner") only, with swaps: then admit more by chains of
  // plain moves (defrag/chains.h) with the moves left.
  bool chains = true;
  // plan_by_method(), any method, goal admit without gang: at most this many
  // moves per GPU admitted (defrag/refine.h trim_to_value; -1 = no limit).
  double max_moves_per_gpu = -1;
  // plan_by_method("planner") only, with swaps: with threads > 1 its two
  // independent pipelines (greedy then swaps; swaps first) run on two
  // threads. The plan is the same as on one thread.
  int threads = 1;
};

DefragPlan plan_defrag(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, const PlannerOptions& options = {});

DefragPlan plan_and_apply(ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                          const PodMoveInfos& infos, const PlannerOptions& options = {});

}  // namespace gpupack
