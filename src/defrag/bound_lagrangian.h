// A tighter bound on what any defrag plan can admit: Lagrangian relaxation
// with exact per-GPU subproblems, and its certificate (the multipliers).
//
// Contract:
// - The problem bounded is goal admit under `budget.max_moves` (immovable pods
//   stay; the other budget limits, group limits and a gang's all-or-none are
//   relaxed away, which only raises the bound). Pods are grouped in classes by
//   request (GPU count and milli, CPU, memory, allowed models).
// - The coupling constraints are priced: each pending class's supply
//   (lambda >= 0), each moved class's departures = arrivals (mu, any sign),
//   the move count (beta >= 0), each node's CPU and memory (rho, sigma >= 0).
//   What is left splits per GPU: keep or move away each movable pod on it, then
//   fill the GPU's free milli with whole pending or arriving pods (an exact
//   knapsack over sizes in units of the greatest common divisor of all sizes).
//   A pod on c GPUs counts 1/c on each (a relaxation). CPU-only pods are
//   decided per node.
// - Each node's CPU is also kept whole in its own term, in cores (what
//   arrives rounded down per GPU share, what leaves rounded up, so every
//   plan meets it): where the per-GPU solution asks more cores than the
//   node frees, a table over the node's net cores picks the best one that
//   fits. Priced only, a node with 1 core free and holes for pods of 4 cores
//   counts a quarter of a pod per hole; kept, none. (openb seed 42: the
//   bound with no move allowed falls from 14,726 to 3,846 milli, at 1% of
//   pods moved from 48,184 to 45,213, at 5% by 0.2%: bench/RESULTS.md.) Nodes whose table
//   would pass 512 states stay priced only. For any multipliers the result
//   is an upper bound on the admitted GPU milli of every plan, in any order
//   of moves (weak duality), so lagrangian_value() of the multipliers is a
//   certificate anyone can recompute.
// - lagrangian_bound() searches the multipliers by projected subgradient
//   steps on the priced-only value (Polyak steps towards fractions of
//   `known_milli`, a value some plan reaches: 1, then 0.5, then 0, each pass
//   from the best prices so far; lower targets take longer steps and on
//   openb end lower), then lowers each node's CPU and memory prices where
//   its cores-kept term falls, and returns that value with its multipliers.
//   Deterministic unless `time_limit_s` cuts the search short. A step costs O(nodes x
//   (classes + size units x distinct sizes) + GPUs x movable pods x size
//   units): size units are 1000 / the sizes' greatest common divisor (100 on
//   openb, 3 ms a step; one share of 333 milli makes the unit 1 and a step
//   about 10x slower).
// - Where the LP of defrag/bound.h lets pending pods fill slivers
//   fractionally, here a pending pod takes a GPU's free milli whole or not at
//   all, so the bound sees that a sliver of 190 milli holds no 220 pod. It
//   is not always below the LP: it drops a gang's all-or-none and the moved
//   milli, cost and group limits, which the LP keeps; the smaller of the two
//   is the bound to quote. Input checks: check_bound_input().
// - The functions keep no global state (safe on separate threads).
#pragma once

#include <vector>

#include "defrag/bound.h"
#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"

namespace gpupack {

// Per class in request order (sorted by GPU count, GPU milli, CPU, memory,
// allowed models; pending classes from the goal, moved classes from the
// movable bound pods), per node in node order.
struct LagrangeMultipliers {
  std::vector<double> pending;  // per pending class, >= 0 (GPU milli per pod)
  std::vector<double> movers;   // per moved class (GPU milli per pod)
  double move = 0;              // per move, >= 0
  std::vector<double> cpu;      // per node, >= 0 (GPU milli per CPU core)
  std::vector<double> memory;   // per node, >= 0 (GPU milli per GiB)
};

struct LagrangianOptions {
  int iterations = 3000;               // per pass
  double time_limit_s = 120;           // stop the search after this long (the best value so far is still a bound)
  double known_milli = 0;              // admitted by some plan: the step's target is above it
  const DefragBound* start = nullptr;  // start from this LP's duals (same state, goal, budget, infos)
  // One pass of the search per entry, each aiming at this fraction of
  // `known_milli` (a lower target takes longer steps) from the best prices
  // so far; `iterations` steps each.
  std::vector<double> target_fractions = {1.0, 0.5, 0.0};
};

struct LagrangianBound {
  double bound_milli = 0;   // lagrangian_value(multipliers)
  double start_milli = 0;   // the value at the starting multipliers
  double priced_milli = 0;  // the search's best with CPU and memory priced only
  double used_milli_before = 0;
  double capacity_milli = 0;
  LagrangeMultipliers multipliers;
  int iterations = 0;
  int pending_classes = 0, mover_classes = 0;
  int unit_milli = 0;  // the knapsack's size unit
  double seconds = 0;
  // What binds at the multipliers found: the price of one more move, and
  // the nodes whose CPU or memory is priced.
  double move_value_milli = 0;
  int cpu_priced_nodes = 0, memory_priced_nodes = 0;
};

// Throws std::invalid_argument as check_bound_input() does.
LagrangianBound lagrangian_bound(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                 const PodMoveInfos& infos, const LagrangianOptions& options = {});

// Both bounds as a caller quotes them: the LP (`lp_milli`: its optimum, or
// the certificate when that is higher; infinity when GLPK did not solve it),
// then the Lagrangian started from the LP's duals, aiming at `known_milli`;
// `bound_milli` is the smaller of the two.
struct DefragBounds {
  DefragBound lp;
  LagrangianBound lagrangian;
  double lp_milli = 0;
  double bound_milli = 0;
};
DefragBounds defrag_bounds(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                           const PodMoveInfos& infos, double known_milli);

// The bound for given multipliers (vectors sized as lagrangian_bound()
// returns them, else std::invalid_argument; negative values of the
// sign-constrained ones are read as 0).
double lagrangian_value(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                        const PodMoveInfos& infos, const LagrangeMultipliers& multipliers);

}  // namespace gpupack
