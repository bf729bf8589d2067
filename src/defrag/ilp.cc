#include "defrag/ilp.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sched/filter.h"

namespace gpupack {

namespace {

// Minimal sparse-row builder over the GLPK C API.
class GlpkModel {
 public:
  GlpkModel() : lp_(glp_create_prob()) { glp_set_obj_dir(lp_, GLP_MAX); }
  ~GlpkModel() { glp_delete_prob(lp_); }
  GlpkModel(const GlpkModel&) = delete;
  GlpkModel& operator=(const GlpkModel&) = delete;

  int binary(double objective) {
    const int j = glp_add_cols(lp_, 1);
    glp_set_col_kind(lp_, j, GLP_BV);
    glp_set_obj_coef(lp_, j, objective);
    return j;
  }
  void fix(int col, double value) { glp_set_col_bnds(lp_, col, GLP_FX, value, value); }
  // sum coef x  (type) bound; type: GLP_UP (<=), GLP_LO (>=), GLP_FX (==).
  void row(const std::vector<std::pair<int, double>>& terms, int type, double bound) {
    const int i = glp_add_rows(lp_, 1);
    glp_set_row_bnds(lp_, i, type, type == GLP_UP ? 0 : bound, type == GLP_UP ? bound : 0);
    if (type == GLP_FX) glp_set_row_bnds(lp_, i, GLP_FX, bound, bound);
    std::vector<int> idx{0};
    std::vector<double> val{0};
    for (auto [c, v] : terms) idx.push_back(c), val.push_back(v);
    glp_set_mat_row(lp_, i, static_cast<int>(terms.size()), idx.data(), val.data());
  }
  bool solve(double time_limit_s, bool* optimal) {
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = static_cast<int>(time_limit_s * 1000);
    const int rc = glp_intopt(lp_, &parm);
    const int st = glp_mip_status(lp_);
    *optimal = rc == 0 && st == GLP_OPT;
    return st == GLP_OPT || st == GLP_FEAS;
  }
  double value(int col) const { return glp_mip_col_val(lp_, col); }
  double objective() const { return glp_mip_obj_val(lp_); }

 private:
  glp_prob* lp_;
};

// The exact model, built in named steps. Variables: x[p][n] (pod p on node
// n), y[p][n][g] (pod p uses GPU g of node n), admitted[p] (pending pods),
// moved[p] (bound pods), free[n][g] (goal free-gpus).
class DefragIlp {
 public:
  using Terms = std::vector<std::pair<int, double>>;
  static constexpr double kMovePenalty = 1e-3;  // prefer fewer moves among equal objectives

  DefragIlp(const ClusterState& state, const DefragGoal& goal, const PodMoveInfos& infos)
      : state_(state), goal_(goal), infos_(infos), admit_(goal.kind == GoalKind::kAdmitPending) {
    for (PodId p : state.bound_pods()) pods_.push_back({p, state.request(p), false, state.assignment(p), 0, 0, {}, {}});
    if (admit_)
      for (const PendingPod& p : goal.pending) pods_.push_back({p.id, p.request, true, Assignment{}, 0, 0, {}, {}});
    const int nodes = state.node_count();
    gpu_terms_.resize(static_cast<size_t>(nodes));
    cpu_terms_.resize(static_cast<size_t>(nodes));
    mem_terms_.resize(static_cast<size_t>(nodes));
    for (int n = 0; n < nodes; ++n) gpu_terms_[static_cast<size_t>(n)].resize(state.gpu_count(NodeId{n}));
    // Order-safe transition: pods that arrive at a node/GPU from elsewhere,
    // on top of everything bound there now.
    move_gpu_terms_ = gpu_terms_;
    move_cpu_terms_ = cpu_terms_;
    move_mem_terms_ = mem_terms_;
  }

  void add_pods() {
    for (Pod& p : pods_) {
      if (p.pending) p.admitted_col = m_.binary(static_cast<double>(std::max<int64_t>(p.req.total_gpu_milli(), 1)));
      Terms one = place_columns(p);  // sum_n x = 1 (or = admitted)
      if (p.pending) {
        one.push_back({p.admitted_col, -1});
        m_.row(one, GLP_FX, 0);
        continue;
      }
      m_.row(one, GLP_FX, 1);
      add_moved_indicator(p);
    }
  }

  // Node capacity; for goal free-gpus, free[n][g] = 1 only when no pod uses the GPU.
  void add_capacity_rows() {
    for (int n = 0; n < state_.node_count(); ++n) {
      const NodeId node{n};
      const size_t ni = static_cast<size_t>(n);
      if (!cpu_terms_[ni].empty()) m_.row(cpu_terms_[ni], GLP_UP, static_cast<double>(state_.cpu_total_milli(node)));
      if (!mem_terms_[ni].empty()) m_.row(mem_terms_[ni], GLP_UP, static_cast<double>(state_.memory_total_mib(node)));
      for (int g = 0; g < state_.gpu_count(node); ++g) {
        const Terms& terms = gpu_terms_[ni][static_cast<size_t>(g)];
        if (!admit_) {
          // sum y + P free <= P
          const int f = m_.binary(1);
          const double big = static_cast<double>(std::max<size_t>(terms.size(), 1));
          Terms with_free = terms;
          for (auto& t : with_free) t.second = 1;
          with_free.push_back({f, big});
          m_.row(with_free, GLP_UP, big);
        }
        if (!terms.empty()) m_.row(terms, GLP_UP, kGpuMilliPerGpu);
      }
    }
  }

  // Pods moving in must fit in what is free now (moves can run in any order).
  void add_order_safe_rows() {
    for (int n = 0; n < state_.node_count(); ++n) {
      const NodeId node{n};
      const size_t ni = static_cast<size_t>(n);
      if (!move_cpu_terms_[ni].empty())
        m_.row(move_cpu_terms_[ni], GLP_UP, static_cast<double>(state_.cpu_free_milli(node)));
      if (!move_mem_terms_[ni].empty())
        m_.row(move_mem_terms_[ni], GLP_UP, static_cast<double>(state_.memory_free_mib(node)));
      for (int g = 0; g < state_.gpu_count(node); ++g)
        if (!move_gpu_terms_[ni][static_cast<size_t>(g)].empty())
          m_.row(move_gpu_terms_[ni][static_cast<size_t>(g)], GLP_UP, state_.gpu_free_milli(node)[g]);
    }
  }

  void add_budget_rows(const DefragBudget& budget) {
    Terms moves, milli, cost;
    std::map<std::string, Terms> groups;
    for (const Pod& p : pods_) {
      if (p.pending) continue;
      const PodMoveInfo& info = move_info(infos_, p.id);
      moves.push_back({p.moved_col, 1});
      milli.push_back({p.moved_col, static_cast<double>(p.orig.gpu_count()) * p.orig.gpu_milli});
      cost.push_back({p.moved_col, move_cost(info, MoveKind::kEvict)});
      if (!info.group.empty()) groups[info.group].push_back({p.moved_col, 1});
    }
    if (budget.max_moves >= 0 && !moves.empty()) m_.row(moves, GLP_UP, budget.max_moves);
    if (budget.max_moved_gpu_milli >= 0 && !milli.empty())
      m_.row(milli, GLP_UP, static_cast<double>(budget.max_moved_gpu_milli));
    if (budget.max_cost >= 0 && !cost.empty()) m_.row(cost, GLP_UP, budget.max_cost + 1e-9);
    for (const auto& [group, terms] : groups) {
      auto it = budget.max_unavailable.find(group);
      if (it != budget.max_unavailable.end()) m_.row(terms, GLP_UP, it->second);
    }
  }

  // A pending gang is admitted whole or not at all.
  void add_gang_row() {
    if (!admit_ || !goal_.gang) return;
    const Pod* first = nullptr;
    for (const Pod& p : pods_) {
      if (!p.pending) continue;
      if (first) m_.row({{p.admitted_col, 1}, {first->admitted_col, -1}}, GLP_FX, 0);
      first = first ? first : &p;
    }
  }

  IlpResult solve(double time_limit_s) {
    IlpResult r;
    r.solved = m_.solve(time_limit_s, &r.optimal);
    if (!r.solved) return r;
    for (const Pod& p : pods_) {
      if (p.pending && m_.value(p.admitted_col) > 0.5) {
        r.admitted.push_back(p.id);
        r.objective += static_cast<double>(std::max<int64_t>(p.req.total_gpu_milli(), 1));
      }
      if (!p.pending && m_.value(p.moved_col) > 0.5) ++r.moves;
      const bool placed = p.pending ? m_.value(p.admitted_col) > 0.5 : m_.value(p.moved_col) > 0.5;
      if (placed) r.placed.push_back({p.id, final_assignment(p)});
    }
    if (!admit_) r.objective = std::round(m_.objective() + kMovePenalty * r.moves);
    return r;
  }

 private:
  struct Pod {
    PodId id;
    Request req;
    bool pending;
    Assignment orig;
    int admitted_col = 0;                             // pending
    int moved_col = 0;                                // bound
    std::vector<std::pair<int, int>> node_cols;       // (node, x col)
    std::vector<std::tuple<int, int, int>> gpu_cols;  // (node, gpu, y col)
  };

  // x and y columns of one pod with their capacity terms; returns sum_n x.
  Terms place_columns(Pod& p) {
    Terms one;
    for (int n = 0; n < state_.node_count(); ++n) {
      const NodeId node{n};
      const size_t ni = static_cast<size_t>(n);
      if (!fits_empty_plain(state_, node, p.req)) continue;
      const int x = m_.binary(0);
      p.node_cols.push_back({n, x});
      one.push_back({x, 1});
      cpu_terms_[ni].push_back({x, static_cast<double>(p.req.cpu_milli)});
      mem_terms_[ni].push_back({x, static_cast<double>(p.req.memory_mib)});
      const bool home = !p.pending && n == static_cast<int>(p.orig.node);
      if (!p.pending && !home) {
        move_cpu_terms_[ni].push_back({x, static_cast<double>(p.req.cpu_milli)});
        move_mem_terms_[ni].push_back({x, static_cast<double>(p.req.memory_mib)});
      }
      if (!p.req.is_gpu()) continue;
      Terms count{{x, -static_cast<double>(p.req.gpu_count)}};  // sum_g y = gpu_count x
      for (int g = 0; g < state_.gpu_count(node); ++g) {
        const int y = m_.binary(0);
        p.gpu_cols.push_back({n, g, y});
        count.push_back({y, 1});
        gpu_terms_[ni][static_cast<size_t>(g)].push_back({y, static_cast<double>(p.req.gpu_milli)});
        if (!p.pending && !(home && (p.orig.gpu_mask >> g) & 1u))
          move_gpu_terms_[ni][static_cast<size_t>(g)].push_back({y, static_cast<double>(p.req.gpu_milli)});
      }
      m_.row(count, GLP_FX, 0);
    }
    return one;
  }

  // The node and GPUs the solution gives `p`.
  Assignment final_assignment(const Pod& p) const {
    Assignment a;
    for (auto [n, x] : p.node_cols)
      if (m_.value(x) > 0.5) a.node = NodeId{n};
    for (auto [n, g, y] : p.gpu_cols)
      if (n == static_cast<int>(a.node) && m_.value(y) > 0.5) a.gpu_mask |= 1u << g;
    a.gpu_milli = p.req.is_gpu() ? p.req.gpu_milli : 0;
    return a;
  }

  // moved >= 1 - (stays on each original GPU / on the original node).
  void add_moved_indicator(Pod& p) {
    const PodMoveInfo& info = move_info(infos_, p.id);
    p.moved_col = m_.binary(-kMovePenalty);
    for (auto [n, x] : p.node_cols)
      if (n == static_cast<int>(p.orig.node) && !p.req.is_gpu()) m_.row({{p.moved_col, 1}, {x, 1}}, GLP_LO, 1);
    for (auto [n, g, y] : p.gpu_cols)
      if (n == static_cast<int>(p.orig.node) && (p.orig.gpu_mask >> g) & 1u)
        m_.row({{p.moved_col, 1}, {y, 1}}, GLP_LO, 1);
    if (info.immovable) m_.fix(p.moved_col, 0);
  }

  const ClusterState& state_;
  const DefragGoal& goal_;
  const PodMoveInfos& infos_;
  const bool admit_;
  GlpkModel m_;
  std::vector<Pod> pods_;
  std::vector<std::vector<Terms>> gpu_terms_, move_gpu_terms_;                  // [node][gpu]
  std::vector<Terms> cpu_terms_, mem_terms_, move_cpu_terms_, move_mem_terms_;  // [node]
};

}  // namespace

IlpResult solve_defrag_ilp(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                           const PodMoveInfos& infos, double time_limit_s, bool order_safe) {
  if (goal.kind != GoalKind::kAdmitPending && goal.kind != GoalKind::kFreeGpus)
    throw std::invalid_argument("the ILP handles the admit and free-gpus goals only");
  const auto start = std::chrono::steady_clock::now();
  DefragIlp ilp(state, goal, infos);
  ilp.add_pods();
  ilp.add_capacity_rows();
  if (order_safe) ilp.add_order_safe_rows();
  ilp.add_budget_rows(budget);
  ilp.add_gang_row();
  IlpResult r = ilp.solve(time_limit_s);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace gpupack
