#include "defrag/ilp.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>
#include <stdexcept>
#include <string>

namespace gpupack {

namespace {

// Minimal sparse-row builder over the GLPK C API.
class Model {
 public:
  Model() : lp_(glp_create_prob()) { glp_set_obj_dir(lp_, GLP_MAX); }
  ~Model() { glp_delete_prob(lp_); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

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

}  // namespace

IlpResult solve_defrag_ilp(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                           const PodMoveInfos& infos, double time_limit_s, bool order_safe) {
  if (goal.kind != GoalKind::kAdmitPending && goal.kind != GoalKind::kFreeGpus)
    throw std::invalid_argument("the ILP handles the admit and free-gpus goals only");
  const auto start = std::chrono::steady_clock::now();
  const bool admit = goal.kind == GoalKind::kAdmitPending;
  constexpr double kMovePenalty = 1e-3;  // prefer fewer moves among equal objectives

  struct Pod {
    PodId id;
    Request req;
    bool pending;
    Assignment orig;
    int admitted_col = 0;  // pending
    int moved_col = 0;     // bound
    std::vector<std::pair<int, int>> node_cols;                  // (node, x col)
    std::vector<std::tuple<int, int, int>> gpu_cols;             // (node, gpu, y col)
  };
  std::vector<Pod> pods;
  for (PodId p : state.bound_pods()) pods.push_back({p, state.request(p), false, state.assignment(p)});
  if (admit)
    for (const PendingPod& p : goal.pending) pods.push_back({p.id, p.request, true, Assignment{}});

  Model m;
  const int nodes = state.node_count();
  // gpu_terms[node][gpu], cpu_terms[node], mem_terms[node]
  std::vector<std::vector<std::vector<std::pair<int, double>>>> gpu_terms(nodes);
  std::vector<std::vector<std::pair<int, double>>> cpu_terms(nodes), mem_terms(nodes);
  for (int n = 0; n < nodes; ++n) gpu_terms[n].resize(state.gpu_count(NodeId{n}));
  // Order-safe transition: pods that arrive at a node/GPU from elsewhere,
  // on top of everything bound there now.
  auto move_gpu_terms = gpu_terms;
  auto move_cpu_terms = cpu_terms, move_mem_terms = mem_terms;

  for (Pod& p : pods) {
    if (p.pending) p.admitted_col = m.binary(static_cast<double>(std::max<int64_t>(p.req.total_gpu_milli(), 1)));
    std::vector<std::pair<int, double>> one;  // sum_n x = 1 (or = admitted)
    for (int n = 0; n < nodes; ++n) {
      const NodeId node{n};
      if (state.cpu_total_milli(node) < p.req.cpu_milli || state.memory_total_mib(node) < p.req.memory_mib) continue;
      if (p.req.is_gpu() && (!model_allowed(p.req.allowed_models, state.gpu_model(node)) ||
                             state.gpu_count(node) < p.req.gpu_count))
        continue;
      const int x = m.binary(0);
      p.node_cols.push_back({n, x});
      one.push_back({x, 1});
      cpu_terms[n].push_back({x, static_cast<double>(p.req.cpu_milli)});
      mem_terms[n].push_back({x, static_cast<double>(p.req.memory_mib)});
      const bool home = !p.pending && n == static_cast<int>(p.orig.node);
      if (!p.pending && !home) {
        move_cpu_terms[n].push_back({x, static_cast<double>(p.req.cpu_milli)});
        move_mem_terms[n].push_back({x, static_cast<double>(p.req.memory_mib)});
      }
      if (p.req.is_gpu()) {
        std::vector<std::pair<int, double>> count{{x, -static_cast<double>(p.req.gpu_count)}};
        for (int g = 0; g < state.gpu_count(node); ++g) {
          const int y = m.binary(0);
          p.gpu_cols.push_back({n, g, y});
          count.push_back({y, 1});
          gpu_terms[n][g].push_back({y, static_cast<double>(p.req.gpu_milli)});
          if (!p.pending && !(home && (p.orig.gpu_mask >> g) & 1u))
            move_gpu_terms[n][g].push_back({y, static_cast<double>(p.req.gpu_milli)});
        }
        m.row(count, GLP_FX, 0);
      }
    }
    if (p.pending) {
      one.push_back({p.admitted_col, -1});
      m.row(one, GLP_FX, 0);
      continue;
    }
    m.row(one, GLP_FX, 1);
    const PodMoveInfo& info = move_info(infos, p.id);
    p.moved_col = m.binary(-kMovePenalty);
    // moved >= 1 - (stays on each original GPU / on the original node)
    for (auto [n, x] : p.node_cols)
      if (n == static_cast<int>(p.orig.node) && !p.req.is_gpu()) m.row({{p.moved_col, 1}, {x, 1}}, GLP_LO, 1);
    for (auto [n, g, y] : p.gpu_cols)
      if (n == static_cast<int>(p.orig.node) && (p.orig.gpu_mask >> g) & 1u)
        m.row({{p.moved_col, 1}, {y, 1}}, GLP_LO, 1);
    if (info.immovable) m.fix(p.moved_col, 0);
  }
  for (int n = 0; n < nodes; ++n) {
    const NodeId node{n};
    if (!cpu_terms[n].empty()) m.row(cpu_terms[n], GLP_UP, static_cast<double>(state.cpu_total_milli(node)));
    if (!mem_terms[n].empty()) m.row(mem_terms[n], GLP_UP, static_cast<double>(state.memory_total_mib(node)));
    for (int g = 0; g < state.gpu_count(node); ++g) {
      auto terms = gpu_terms[n][g];
      if (!admit) {
        // free[n][g] = 1 only when no pod uses the GPU: sum y + P x free <= P
        const int f = m.binary(1);
        const double big = static_cast<double>(std::max<size_t>(terms.size(), 1));
        auto with_free = terms;
        for (auto& t : with_free) t.second = 1;
        with_free.push_back({f, big});
        m.row(with_free, GLP_UP, big);
      }
      if (!terms.empty()) m.row(terms, GLP_UP, kGpuMilliPerGpu);
    }
  }
  if (order_safe) {
    for (int n = 0; n < nodes; ++n) {
      const NodeId node{n};
      if (!move_cpu_terms[n].empty())
        m.row(move_cpu_terms[n], GLP_UP, static_cast<double>(state.cpu_free_milli(node)));
      if (!move_mem_terms[n].empty())
        m.row(move_mem_terms[n], GLP_UP, static_cast<double>(state.memory_free_mib(node)));
      for (int g = 0; g < state.gpu_count(node); ++g)
        if (!move_gpu_terms[n][g].empty()) m.row(move_gpu_terms[n][g], GLP_UP, state.gpu_free_milli(node)[g]);
    }
  }
  // Budget.
  std::vector<std::pair<int, double>> moves, milli, cost;
  std::map<std::string, std::vector<std::pair<int, double>>> groups;
  for (const Pod& p : pods) {
    if (p.pending) continue;
    const PodMoveInfo& info = move_info(infos, p.id);
    moves.push_back({p.moved_col, 1});
    milli.push_back({p.moved_col, static_cast<double>(p.orig.gpu_count()) * p.orig.gpu_milli});
    cost.push_back({p.moved_col, move_cost(info, MoveKind::kEvict)});
    if (!info.group.empty()) groups[info.group].push_back({p.moved_col, 1});
  }
  if (budget.max_moves >= 0 && !moves.empty()) m.row(moves, GLP_UP, budget.max_moves);
  if (budget.max_moved_gpu_milli >= 0 && !milli.empty())
    m.row(milli, GLP_UP, static_cast<double>(budget.max_moved_gpu_milli));
  if (budget.max_cost >= 0 && !cost.empty()) m.row(cost, GLP_UP, budget.max_cost + 1e-9);
  for (const auto& [group, terms] : groups) {
    auto it = budget.max_unavailable.find(group);
    if (it != budget.max_unavailable.end()) m.row(terms, GLP_UP, it->second);
  }
  if (admit && goal.gang) {
    const Pod* first = nullptr;
    for (const Pod& p : pods) {
      if (!p.pending) continue;
      if (first) m.row({{p.admitted_col, 1}, {first->admitted_col, -1}}, GLP_FX, 0);
      first = first ? first : &p;
    }
  }

  IlpResult r;
  r.solved = m.solve(time_limit_s, &r.optimal);
  if (r.solved) {
    for (const Pod& p : pods) {
      if (p.pending && m.value(p.admitted_col) > 0.5) {
        r.admitted.push_back(p.id);
        r.objective += static_cast<double>(std::max<int64_t>(p.req.total_gpu_milli(), 1));
      }
      if (!p.pending && m.value(p.moved_col) > 0.5) ++r.moves;
    }
    if (!admit) r.objective = std::round(m.objective() + kMovePenalty * r.moves);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace gpupack
