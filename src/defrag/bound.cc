#include "defrag/bound.h"

#include <fmt/format.h>
#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "sched/filter.h"

namespace gpupack {

double dual_feasible_milli(int32_t milli, int eps) {
  if (milli > kGpuMilliPerGpu - eps) return kGpuMilliPerGpu;
  if (milli < eps) return 0;
  return milli;
}

double certify(const BoundLp& lp, const std::vector<double>& duals) {
  if (duals.size() != lp.rows.size()) throw std::invalid_argument("certify: one dual per row is needed");
  std::vector<long double> reduced(lp.objective.begin(), lp.objective.end());
  long double bound = 0;
  for (size_t i = 0; i < lp.rows.size(); ++i) {
    const BoundLp::Row& row = lp.rows[i];
    const long double y = row.equality ? duals[i] : std::max(0.0, duals[i]);
    if (y == 0) continue;
    bound += y * row.rhs;
    for (auto [col, coef] : row.terms) reduced[static_cast<size_t>(col)] -= y * coef;
  }
  for (size_t j = 0; j < reduced.size(); ++j)
    if (reduced[j] > 0) bound += reduced[j] * lp.upper[j];
  return static_cast<double>(bound);
}

void check_bound_input(const ClusterState& state, const DefragGoal& goal) {
  if (goal.kind != GoalKind::kAdmitPending) throw std::invalid_argument("the defrag bounds handle goal admit only");
  for (int n = 0; n < state.node_count(); ++n)
    if (state.has_hardware_setup(NodeId{n}))
      throw std::invalid_argument(fmt::format(
          "the defrag bounds model plain GPUs only: node {} has a hardware setup (time-slicing, MPS or MIG)",
          state.node_name(NodeId{n})));
  for (const PendingPod& p : goal.pending) {
    if (std::string why = p.request.validate(); !why.empty())
      throw std::invalid_argument(fmt::format("pending pod {}: {}", static_cast<int>(p.id), why));
    if (p.request.is_gpu() && (p.request.gpu_milli <= 0 || p.request.gpu_milli > kGpuMilliPerGpu))
      throw std::invalid_argument(
          fmt::format("pending pod {}: GPU share {} is not in (0, 1000]", static_cast<int>(p.id), p.request.gpu_milli));
  }
}

namespace {

// eps values of the packing rows, from the GPU shares present.
std::vector<int> packing_eps(const ClusterState& state, const DefragGoal& goal) {
  std::set<int> eps;
  auto add = [&](const Request& r) {
    if (!r.is_gpu() || r.gpu_milli <= 0 || r.gpu_milli >= kGpuMilliPerGpu) return;
    eps.insert(r.gpu_milli > kGpuMilliPerGpu / 2 ? kGpuMilliPerGpu - r.gpu_milli + 1 : r.gpu_milli);
  };
  for (PodId p : state.bound_pods()) add(state.request(p));
  for (const PendingPod& p : goal.pending) add(p.request);
  return {eps.begin(), eps.end()};
}

class BoundBuilder {
 public:
  BoundBuilder(const ClusterState& state, const BoundOptions& options, BoundLp& lp)
      : state_(state), options_(options), lp_(lp), node_rows_(static_cast<size_t>(state.node_count())) {
    // What the bound pods hold now in each packing row.
    for (NodeRows& rows : node_rows_) rows.packing_base.assign(lp.eps.size(), 0);
    for (PodId p : state.bound_pods()) {
      const Request& r = state.request(p);
      const Assignment& a = state.assignment(p);
      if (!r.is_gpu()) continue;
      std::vector<double>& base = node_rows_[index(a.node)].packing_base;
      for (size_t k = 0; k < lp.eps.size(); ++k) base[k] += r.gpu_count * dual_feasible_milli(a.gpu_milli, lp.eps[k]);
    }
  }

  int column(double objective, double upper) {
    lp_.objective.push_back(objective);
    lp_.upper.push_back(upper);
    return static_cast<int>(lp_.objective.size()) - 1;
  }

  // Adds `sign` x the pod's use on `node` to that node's rows for column `col`.
  void use(NodeId node, const Request& r, int32_t milli, int col, double sign) {
    NodeRows& rows = node_rows_[index(node)];
    if (options_.cpu && r.cpu_milli) rows.cpu.push_back({col, sign * static_cast<double>(r.cpu_milli)});
    if (options_.memory && r.memory_mib) rows.memory.push_back({col, sign * static_cast<double>(r.memory_mib)});
    if (!r.is_gpu()) return;
    rows.milli.push_back({col, sign * r.gpu_count * static_cast<double>(milli)});
    if (!options_.gpu_packing) return;
    rows.packing.resize(lp_.eps.size());
    for (size_t k = 0; k < lp_.eps.size(); ++k) {
      const double f = dual_feasible_milli(milli, lp_.eps[k]);
      if (f > 0) rows.packing[k].push_back({col, sign * r.gpu_count * f});
    }
  }

  void add_node_rows() {
    for (int n = 0; n < state_.node_count(); ++n) {
      const NodeId node{n};
      NodeRows& rows = node_rows_[static_cast<size_t>(n)];
      row("cpu", n, rows.cpu, static_cast<double>(state_.cpu_free_milli(node)));
      row("memory", n, rows.memory, static_cast<double>(state_.memory_free_mib(node)));
      row("gpu-milli", n, rows.milli, static_cast<double>(state_.gpu_free_total_milli(node)));
      if (!options_.gpu_packing) continue;
      rows.packing.resize(lp_.eps.size());
      for (size_t k = 0; k < lp_.eps.size(); ++k)
        row("gpu-packing", n, rows.packing[k],
            static_cast<double>(state_.gpu_count(node)) * kGpuMilliPerGpu - rows.packing_base[k]);
    }
  }

  void row(const std::string& family, int node, const std::vector<std::pair<int, double>>& terms, double rhs,
           bool equality = false, int cls = -1) {
    if (terms.empty()) return;
    lp_.rows.push_back({family, node, cls, equality, rhs, terms});
  }

 private:
  struct NodeRows {
    std::vector<std::pair<int, double>> cpu, memory, milli;
    std::vector<std::vector<std::pair<int, double>>> packing;  // per eps
    std::vector<double> packing_base;                          // per eps
  };
  const ClusterState& state_;
  const BoundOptions& options_;
  BoundLp& lp_;
  std::vector<NodeRows> node_rows_;
};

BoundLp build_lp(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                 const PodMoveInfos& infos, const BoundOptions& options, int* move_row) {
  BoundLp lp;
  if (options.gpu_packing) lp.eps = packing_eps(state, goal);
  BoundBuilder b(state, options, lp);

  // Movable bound pods leave (d_p) and arrive by class (e_{k,n}).
  std::map<RequestClass, std::pair<Request, std::vector<int>>> movers;  // class -> (request, d columns)
  std::vector<std::pair<int, double>> moves, milli, cost;
  std::map<std::string, std::vector<std::pair<int, double>>> groups;
  for (PodId p : state.bound_pods()) {
    const PodMoveInfo& info = move_info(infos, p);
    if (info.immovable) continue;
    const Request& r = state.request(p);
    const Assignment& a = state.assignment(p);
    const int d = b.column(0, 1);
    lp.move_columns.push_back(d);
    b.use(a.node, r, a.gpu_milli, d, -1);
    auto& cls = movers.try_emplace(request_class(r), r, std::vector<int>{}).first->second;
    cls.second.push_back(d);
    moves.push_back({d, 1});
    milli.push_back({d, static_cast<double>(r.gpu_count) * a.gpu_milli});
    cost.push_back({d, std::min(move_cost(info, MoveKind::kEvict), move_cost(info, MoveKind::kMigrate))});
    if (!info.group.empty()) groups[info.group].push_back({d, 1});
  }
  int mover_cls = 0;
  for (auto& [key, cls] : movers) {
    std::vector<std::pair<int, double>> balance;  // sum_n e - sum_p d = 0
    for (int d : cls.second) balance.push_back({d, -1});
    for (int n = 0; n < state.node_count(); ++n) {
      if (!fits_empty_plain(state, NodeId{n}, cls.first)) continue;
      const int e = b.column(0, static_cast<double>(cls.second.size()));
      b.use(NodeId{n}, cls.first, cls.first.gpu_milli, e, +1);
      balance.push_back({e, 1});
    }
    b.row("conservation", -1, balance, 0, true, mover_cls++);
  }

  // Pending pods by class (a_{k,n}); a gang admits the same fraction t of each.
  std::map<RequestClass, std::pair<Request, int>> pending;
  for (const PendingPod& p : goal.pending)
    ++pending.try_emplace(request_class(p.request), p.request, 0).first->second.second;
  const int gang = goal.gang ? b.column(0, 1) : -1;
  int pending_cls = 0;
  for (auto& [key, cls] : pending) {
    const auto& [r, count] = cls;
    const double value = static_cast<double>(std::max<int64_t>(r.total_gpu_milli(), 1));
    std::vector<std::pair<int, double>> supply;
    for (int n = 0; n < state.node_count(); ++n) {
      if (!fits_empty_plain(state, NodeId{n}, r)) continue;
      const int a = b.column(value, count);
      b.use(NodeId{n}, r, r.gpu_milli, a, +1);
      supply.push_back({a, 1});
    }
    if (gang >= 0) {
      supply.push_back({gang, -static_cast<double>(count)});
      b.row("gang", -1, supply, 0, true, pending_cls);
    } else {
      b.row("pending", -1, supply, count, false, pending_cls);
    }
    ++pending_cls;
  }

  b.add_node_rows();
  *move_row = -1;
  if (options.budget) {
    if (budget.max_moves >= 0 && !moves.empty()) {
      *move_row = static_cast<int>(lp.rows.size());
      b.row("moves", -1, moves, budget.max_moves);
    }
    if (budget.max_moved_gpu_milli >= 0)
      b.row("moved-milli", -1, milli, static_cast<double>(budget.max_moved_gpu_milli));
    if (budget.max_cost >= 0) b.row("cost", -1, cost, budget.max_cost + 1e-9);  // BudgetUse::within's tolerance
    for (const auto& [group, terms] : groups) {
      auto it = budget.max_unavailable.find(group);
      if (it != budget.max_unavailable.end()) b.row("group", -1, terms, std::max(it->second, 0));
    }
  }
  return lp;
}

// Solves `lp` with GLPK's simplex; fills the optimum and the row duals.
bool solve_lp(const BoundLp& lp, double time_limit_s, double* optimum, std::vector<double>* primal,
              std::vector<double>* duals) {
  glp_prob* p = glp_create_prob();
  glp_set_obj_dir(p, GLP_MAX);
  const int cols = static_cast<int>(lp.objective.size());
  if (cols > 0) glp_add_cols(p, cols);
  for (int j = 0; j < cols; ++j) {
    const double u = lp.upper[static_cast<size_t>(j)];
    glp_set_col_bnds(p, j + 1, u > 0 ? GLP_DB : GLP_FX, 0, std::max(u, 0.0));
    glp_set_obj_coef(p, j + 1, lp.objective[static_cast<size_t>(j)]);
  }
  const int rows = static_cast<int>(lp.rows.size());
  if (rows > 0) glp_add_rows(p, rows);
  std::vector<int> idx;
  std::vector<double> val;
  for (int i = 0; i < rows; ++i) {
    const BoundLp::Row& row = lp.rows[static_cast<size_t>(i)];
    glp_set_row_bnds(p, i + 1, row.equality ? GLP_FX : GLP_UP, row.rhs, row.rhs);
    idx.assign(1, 0);
    val.assign(1, 0);
    for (auto [c, v] : row.terms) idx.push_back(c + 1), val.push_back(v);
    glp_set_mat_row(p, i + 1, static_cast<int>(row.terms.size()), idx.data(), val.data());
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;  // duals are needed for every row
  // GLPK aborts the process on a negative limit.
  const double limit_ms = std::isfinite(time_limit_s) ? std::clamp(time_limit_s * 1000, 0.0, 2e9) : 2e9;
  parm.tm_lim = std::isnan(time_limit_s) ? 0 : static_cast<int>(limit_ms);
  const int was = glp_term_out(GLP_OFF);  // glp_scale_prob prints otherwise
  glp_scale_prob(p, GLP_SF_AUTO);
  const int rc = glp_simplex(p, &parm);
  glp_term_out(was);
  const bool ok = rc == 0 && glp_get_status(p) == GLP_OPT;
  if (ok) {
    *optimum = glp_get_obj_val(p);
    primal->resize(static_cast<size_t>(cols));
    for (int j = 0; j < cols; ++j) (*primal)[static_cast<size_t>(j)] = glp_get_col_prim(p, j + 1);
    duals->resize(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) (*duals)[static_cast<size_t>(i)] = glp_get_row_dual(p, i + 1);
  }
  glp_delete_prob(p);
  return ok;
}

}  // namespace

DefragBound defrag_bound(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                         const PodMoveInfos& infos, const BoundOptions& options) {
  check_bound_input(state, goal);
  const auto start = std::chrono::steady_clock::now();
  DefragBound out;
  out.used_milli_before = static_cast<double>(state.gpu_used_milli());
  out.capacity_milli = static_cast<double>(state.gpu_capacity_milli());
  int move_row = -1;
  out.lp = build_lp(state, goal, budget, infos, options, &move_row);
  out.rows = static_cast<int>(out.lp.rows.size());
  out.columns = static_cast<int>(out.lp.objective.size());
  std::vector<double> primal;
  out.solved = solve_lp(out.lp, options.time_limit_s, &out.admitted_milli, &primal, &out.duals);
  if (out.solved) {
    out.certified_milli = certify(out.lp, out.duals);
    std::map<std::string, DefragBound::Binding> by_family;
    for (size_t i = 0; i < out.lp.rows.size(); ++i) {
      const BoundLp::Row& row = out.lp.rows[i];
      const double y = out.duals[i];
      if (row.equality || y <= 1e-9) continue;
      DefragBound::Binding& fam = by_family[row.family];
      fam.family = row.family;
      ++fam.rows;
      fam.value_milli += y * row.rhs;
    }
    for (int col : out.lp.move_columns) out.moves_used += primal[static_cast<size_t>(col)];
    for (auto& [name, fam] : by_family) out.binding.push_back(fam);
    std::sort(out.binding.begin(), out.binding.end(), [](const auto& a, const auto& b) { return a.rows > b.rows; });
    if (move_row >= 0) out.move_value_milli = std::max(0.0, out.duals[static_cast<size_t>(move_row)]);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace gpupack
