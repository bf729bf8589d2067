// An upper bound on what any defrag plan can admit, with a certificate.
//
// Contract:
// - defrag_bound() builds and solves (GLPK simplex) a linear relaxation of
//   goal admit: its optimum is at least the GPU milli admitted by any plan
//   within `budget` (move count, moved GPU milli, cost at each pod's cheapest
//   move kind, group max-unavailable; immovable pods stay), whatever the order
//   of its moves, so no plan (planner, baseline or exact ILP) can beat it.
//   Variables: d_p, how much of movable bound pod p leaves its node;
//   e_{k,n}, how many bound pods of request class k arrive on node n;
//   a_{k,n}, how many pending pods of class k are admitted on node n (gang:
//   the same fraction t of every pending class). Per node, rows bound CPU,
//   memory, GPU milli and, for GPU packing, sum over pods of gpu_count x
//   f_eps(milli) <= gpus x 1000 for each eps in `BoundLp::eps` (the
//   Fekete-Schepers dual-feasible functions: f = 1000 above 1000 - eps, 0
//   below eps, the milli between; each GPU satisfies it, so the node does).
//   eps is taken from the pod sizes: 1001 - m for each shared size m > 500
//   (m then counts as a whole GPU) and m for each size m <= 500. Pods go only
//   to nodes whose GPU model they allow and whose totals could hold them.
//   Not modelled, so relaxed: which GPU of a node holds what (pods within a
//   node may be rearranged freely and a remap is not a move). GPUs are
//   charged their pods' milli, as on plain GPUs: a state with a hardware
//   setup (time-slicing, MPS replicas, MIG), whose charges differ, is refused.
// - The LP is kept (`BoundLp`) with the solver's row duals; certify()
//   recomputes a bound from any duals by weak duality (every column has a
//   finite upper bound), independent of the solver: for y >= 0 on the <= rows
//   and any y on the = rows, sum_i y_i b_i + sum_j u_j max(0, c_j - y^T A_j)
//   bounds the LP optimum. `certified_milli` is that value for the solver's
//   duals.
// - `BoundOptions` drops constraint families, so a caller can report which
//   binds (the bound without each family, beside the duals' `binding`);
//   `budget` drops the move count, moved milli, cost and group rows together.
// - Not thread-safe (GLPK keeps global state).
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"

namespace gpupack {

struct BoundOptions {
  bool cpu = true;
  bool memory = true;
  bool gpu_packing = true;    // the f_eps rows
  bool budget = true;         // move count, moved milli, cost, groups
  double time_limit_s = 600;  // GLPK's limit (NaN or negative read as 0: no time)
};

// A linear program: maximise c x subject to rows, 0 <= x <= upper.
struct BoundLp {
  struct Row {
    std::string family;  // "cpu", "memory", "gpu-milli", "gpu-packing", "moves", "moved-milli", "cost",
                         // "group", "pending", "gang", "conservation"
    int node = -1;       // node rows
    int cls = -1;        // pending and conservation rows: the class, in request order (see defrag_bound())
    bool equality = false;
    double rhs = 0;
    std::vector<std::pair<int, double>> terms;  // (column, coefficient)
  };
  std::vector<double> objective, upper;
  std::vector<Row> rows;
  std::vector<int> eps;           // the f_eps rows' eps values
  std::vector<int> move_columns;  // the d_p columns
};

struct DefragBound {
  bool solved = false;
  double admitted_milli = 0;   // LP optimum: GPU milli any plan admits at most
  double certified_milli = 0;  // certify(lp, duals)
  double used_milli_before = 0;
  double capacity_milli = 0;
  double moves_used = 0;        // sum of d in the LP's solution
  double move_value_milli = 0;  // dual of the move-count row: milli per extra move
  // Families with rows the optimum prices (dual > 0: more of it would raise
  // the bound), most rows first; `value_milli` is their sum y_i b_i (0 for a
  // row with nothing left, which still binds). The shares need not add up to
  // the bound: the columns' upper bounds carry the rest.
  struct Binding {
    std::string family;
    int rows = 0;
    double value_milli = 0;
  };
  std::vector<Binding> binding;
  int rows = 0, columns = 0;
  double seconds = 0;
  BoundLp lp;
  std::vector<double> duals;  // per row
};

// Throws std::invalid_argument (check_bound_input()) on input the bounds
// do not model.
DefragBound defrag_bound(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                         const PodMoveInfos& infos, const BoundOptions& options = {});

// What both bounds tell pods apart by, in the order their classes (rows,
// multipliers) take: GPU count, GPU milli, CPU, memory, allowed models.
using RequestClass = std::tuple<int32_t, int32_t, int64_t, int64_t, ModelMask>;
inline RequestClass request_class(const Request& r) {
  return {r.gpu_count, r.gpu_milli, r.cpu_milli, r.memory_mib, r.allowed_models};
}

// Throws std::invalid_argument unless goal.kind is admit, no node has a
// hardware setup, and every pending request is valid with a GPU share in
// (0, 1000] when it asks for GPUs.
void check_bound_input(const ClusterState& state, const DefragGoal& goal);

// Weak-duality bound of `lp` for `duals` (one per row; <= rows' duals below
// zero are read as zero).
double certify(const BoundLp& lp, const std::vector<double>& duals);

// f_eps for one GPU's share (capacity 1000).
double dual_feasible_milli(int32_t milli, int eps);

}  // namespace gpupack
