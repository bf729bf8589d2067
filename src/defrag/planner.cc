#include "defrag/planner.h"
#include "defrag/search_keys.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include "policy/gpu_choice.h"
#include "sched/filter.h"

namespace gpupack {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Where displaced pods may go.
struct Rules {
  NodeId home = kNoNode;         // node being cleared
  uint32_t reserved = 0;         // GPUs of `home` no displaced pod may take
  bool avoid_free_gpus = false;  // shared pods never take a whole free GPU
  bool avoid_empty_nodes = false;
  bool allow_chain = false;  // a shared pod may displace one small pod
  NodeId other = kNoNode;    // one more GPU set no pod may take
  uint32_t other_mask = 0;
};

// Pods to displace from one node, and (for admissions) the GPUs to use.
struct Clearing {
  NodeId node = kNoNode;
  uint32_t gpu_mask = 0;
  std::vector<PodId> victims;
  std::vector<char> must_leave;  // parallel to victims: may not stay on `node`
  double cost = 0;
};

struct CacheEntry {
  uint64_t version = 0;
  double cost = kInf;
  int moves = 0;
};

class Planner {
 public:
  Planner(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget, const PodMoveInfos& infos,
          const PlannerOptions& opt)
      : state_(state),
        goal_(goal),
        budget_(budget),
        infos_(infos),
        opt_(opt),
        tracker_(state_, goal.target.get()),
        start_(std::chrono::steady_clock::now()) {
    state_.commit();
    node_pods_.resize(state_.node_count());
    for (PodId p : state_.bound_pods()) node_pods_[index(state_.assignment(p).node)].push_back(p);
  }

  DefragPlan run() {
    DefragPlan plan;
    plan.goal = goal_.kind;
    plan.algorithm = "greedy";
    plan.before = tracker_.measures(state_);
    switch (goal_.kind) {
      case GoalKind::kAdmitPending:
        run_admit(plan);
        break;
      case GoalKind::kFreeGpus:
        run_evacuate(false, false);
        break;
      case GoalKind::kFreeNodes:
        run_evacuate(true, false);
        break;
      case GoalKind::kFragBelow:
        run_evacuate(false, true);
        break;
    }
    if (goal_.kind == GoalKind::kAdmitPending && goal_.gang && admitted_ != goal_.pending.size()) {
      steps_.clear();
      use_ = BudgetUse{};
      admitted_set_.clear();
    }
    plan.steps = std::move(steps_);
    plan.use = use_;
    plan.after = plan.steps.empty() ? plan.before : plan.steps.back().after;
    if (plan.steps.empty()) plan.after = plan.before;
    for (const PendingPod& p : goal_.pending)
      if (!admitted_set_.count(static_cast<int32_t>(p.id))) plan.not_admitted.push_back(p.id);
    plan.plan_seconds = elapsed();
    return plan;
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool out_of_time() const { return opt_.time_limit_s > 0 && elapsed() > opt_.time_limit_s; }

  bool locked(PodId p) const { return index(p) < locked_.size() && locked_[index(p)]; }
  void lock(PodId p) {
    if (index(p) >= locked_.size()) locked_.resize(index(p) + 1, 0);
    locked_[index(p)] = 1;
  }
  bool movable(PodId p) const { return !locked(p) && !move_info(infos_, p).immovable; }
  double cross_cost(PodId p) const {
    const PodMoveInfo& info = move_info(infos_, p);
    return move_cost(info, info.checkpointable ? MoveKind::kMigrate : MoveKind::kEvict);
  }
  int remaining_moves() const {
    return budget_.max_moves < 0 ? std::numeric_limits<int>::max() : budget_.max_moves - use_.moves;
  }
  bool node_empty(NodeId n) const {
    return state_.cpu_free_milli(n) == state_.cpu_total_milli(n) &&
           state_.memory_free_mib(n) == state_.memory_total_mib(n) &&
           state_.gpu_free_total_milli(n) == int64_t{state_.gpu_count(n)} * kGpuMilliPerGpu;
  }

  // ---------------------------------------------------------------- clearing
  // The cheapest set of pods to displace from `n` so that `req` fits there.
  double plan_clearing(NodeId n, const Request& req, Clearing* out) const {
    const ClusterState& s = state_;
    if (!fits_empty_plain(s, n, req)) return kInf;
    if (fits(s, n, req)) {
      if (out) *out = Clearing{n, choose_gpus_best_fit(s.gpu_free_milli(n), req), {}, {}, 0};
      return 0;
    }
    const auto& pods = node_pods_[index(n)];
    const auto free = s.gpu_free_milli(n);
    const int gpus = s.gpu_count(n);
    std::vector<PodId> victims;
    uint32_t mask = 0;
    if (req.is_gpu()) {
      struct GpuCost {
        double cost;
        int32_t used;
        int gpu;
        std::vector<PodId> pods;
      };
      std::vector<GpuCost> options;
      for (int g = 0; g < gpus; ++g) {
        GpuCost c{0, kGpuMilliPerGpu - free[g], g, {}};
        if (free[g] < req.gpu_milli) {
          std::vector<PodId> on;
          for (PodId p : pods)
            if (s.assignment(p).gpu_mask & (1u << g)) on.push_back(p);
          std::sort(on.begin(), on.end(), [&](PodId a, PodId b) {
            if (s.assignment(a).gpu_milli != s.assignment(b).gpu_milli)
              return s.assignment(a).gpu_milli > s.assignment(b).gpu_milli;
            return a < b;
          });
          int32_t freed = free[g];
          for (PodId p : on) {
            if (freed >= req.gpu_milli) break;
            if (!movable(p)) continue;
            // Whole-GPU pods only move to assemble multi-GPU room; a shared
            // pod only when some other GPU could take it.
            const Assignment& pa = s.assignment(p);
            if (pa.gpu_milli == kGpuMilliPerGpu ? req.gpu_count < 2
                                                : !room_somewhere(s.request(p), pa.gpu_milli, kNoNode))
              continue;
            freed += s.assignment(p).gpu_milli;
            c.cost += cross_cost(p);
            c.pods.push_back(p);
          }
          if (freed < req.gpu_milli) continue;
        }
        options.push_back(std::move(c));
      }
      if (static_cast<int>(options.size()) < req.gpu_count) return kInf;
      std::sort(options.begin(), options.end(), [](const GpuCost& a, const GpuCost& b) {
        return std::tie(a.cost, a.used, a.gpu) < std::tie(b.cost, b.used, b.gpu);
      });
      for (int i = 0; i < req.gpu_count; ++i) {
        mask |= 1u << options[i].gpu;
        for (PodId p : options[i].pods)
          if (std::find(victims.begin(), victims.end(), p) == victims.end()) victims.push_back(p);
      }
    }
    std::vector<char> must_leave(victims.size(), 0);
    int64_t cpu = s.cpu_free_milli(n), mem = s.memory_free_mib(n);
    for (PodId p : victims) {
      cpu += s.request(p).cpu_milli;
      mem += s.request(p).memory_mib;
    }
    if (cpu < req.cpu_milli || mem < req.memory_mib) {
      std::vector<PodId> others;
      for (PodId p : pods)
        if (movable(p) && std::find(victims.begin(), victims.end(), p) == victims.end()) others.push_back(p);
      // Pods that hold CPU but little GPU first.
      std::sort(others.begin(), others.end(), [&](PodId a, PodId b) {
        const auto ka = std::make_tuple(s.request(a).total_gpu_milli(), -s.request(a).cpu_milli, a);
        const auto kb = std::make_tuple(s.request(b).total_gpu_milli(), -s.request(b).cpu_milli, b);
        return ka < kb;
      });
      // One pod that covers the whole deficit, the smallest such, if any.
      const int64_t cpu_need = req.cpu_milli - cpu, mem_need = req.memory_mib - mem;
      std::optional<PodId> single;
      for (PodId p : others) {
        const Request& r = s.request(p);
        if (r.cpu_milli < cpu_need || r.memory_mib < mem_need) continue;
        if (!room_somewhere(r, s.assignment(p).gpu_milli, n)) continue;
        if (!single || std::make_tuple(r.total_gpu_milli(), r.cpu_milli) <
                           std::make_tuple(s.request(*single).total_gpu_milli(), s.request(*single).cpu_milli))
          single = p;
      }
      if (single) others.insert(others.begin(), *single);
      for (PodId p : others) {
        if (cpu >= req.cpu_milli && mem >= req.memory_mib) break;
        if (std::find(victims.begin(), victims.end(), p) != victims.end()) continue;
        if (s.request(p).cpu_milli == 0 && mem >= req.memory_mib) continue;
        if (!room_somewhere(s.request(p), s.assignment(p).gpu_milli, n)) continue;
        victims.push_back(p);
        must_leave.push_back(1);
        cpu += s.request(p).cpu_milli;
        mem += s.request(p).memory_mib;
      }
      if (cpu < req.cpu_milli || mem < req.memory_mib) return kInf;
    }
    double cost = 0;
    for (PodId p : victims) cost += cross_cost(p);
    if (out) *out = Clearing{n, mask, std::move(victims), std::move(must_leave), cost};
    return cost;
  }

  // Is there a node with a GPU of at least `milli` free and the CPU and
  // memory of `r`? Answers are cached until the next committed change.
  bool room_somewhere(const Request& r, int32_t milli, NodeId except) const {
    if (chain_round_) return true;  // a chain may make the room
    if (room_epoch_ != epoch_ + 1) {
      room_nodes_.clear();
      for (int i = 0; i < state_.node_count(); ++i) {
        int32_t best = 0;
        for (int32_t f : state_.gpu_free_milli(NodeId{i})) best = std::max(best, f);
        room_nodes_.push_back({best, i});
      }
      std::sort(room_nodes_.begin(), room_nodes_.end(), std::greater<>());
      room_cache_.clear();
      room_epoch_ = epoch_ + 1;
    }
    const auto key = std::make_tuple(milli, r.cpu_milli, r.memory_mib, static_cast<int>(except));
    if (auto it = room_cache_.find(key); it != room_cache_.end()) return it->second;
    bool found = false;
    for (const auto& [best, i] : room_nodes_) {
      if (best < milli) break;
      if (NodeId{i} == except) continue;
      if (state_.cpu_free_milli(NodeId{i}) >= r.cpu_milli && state_.memory_free_mib(NodeId{i}) >= r.memory_mib) {
        found = true;
        break;
      }
    }
    room_cache_.emplace(key, found);
    return found;
  }

  // ---------------------------------------------------------- re-placement
  // Tightest place for `req` under `rules` in the current state.
  std::optional<Assignment> place(const Request& req, const Rules& rules, bool leave_home,
                                  NodeId avoid = kNoNode) const {
    const ClusterState& s = state_;
    std::optional<Assignment> best;
    std::tuple<int64_t, int64_t, int64_t> best_key{};
    for (int i = 0; i < s.node_count(); ++i) {
      const NodeId n{i};
      if ((leave_home && n == rules.home) || n == avoid) continue;
      if (!fits(s, n, req)) continue;
      if (rules.avoid_empty_nodes && node_empty(n)) continue;
      const uint32_t reserved = (n == rules.home ? rules.reserved : 0) | (n == rules.other ? rules.other_mask : 0);
      const auto free = s.gpu_free_milli(n);
      if (!req.is_gpu()) {
        const std::tuple<int64_t, int64_t, int64_t> key{s.gpu_free_total_milli(n), s.cpu_free_milli(n), i};
        if (!best || key < best_key) best = Assignment{n, 0, 0}, best_key = key;
      } else if (req.is_shared()) {
        for (int g = 0; g < s.gpu_count(n); ++g) {
          if ((reserved >> g) & 1u || free[g] < req.gpu_milli) continue;
          if (rules.avoid_free_gpus && free[g] == kGpuMilliPerGpu) continue;
          const std::tuple<int64_t, int64_t, int64_t> key{free[g] - req.gpu_milli, s.gpu_free_total_milli(n),
                                                          i * 64 + g};
          if (!best || key < best_key) best = Assignment{n, 1u << g, req.gpu_milli}, best_key = key;
        }
      } else {
        uint32_t mask = 0;
        int whole = 0, taken = 0;
        for (int g = 0; g < s.gpu_count(n); ++g) {
          if ((reserved >> g) & 1u || free[g] < req.gpu_milli) continue;
          ++whole;
          if (taken < req.gpu_count) mask |= 1u << g, ++taken;
        }
        if (taken < req.gpu_count) continue;
        const std::tuple<int64_t, int64_t, int64_t> key{whole - req.gpu_count, s.gpu_free_total_milli(n), i};
        if (!best || key < best_key) best = Assignment{n, mask, req.gpu_milli}, best_key = key;
      }
    }
    return best;
  }

  struct Placed {
    PodId pod;
    Assignment from;
    Assignment to;
    bool chained = false;  // part of a chain: keeps its place in the order
  };

  // Two-level chain for a pod that fits nowhere: on another node, displace
  // one movable pod `u` after which the pod fits there (tightest first), put
  // the pod there, then re-place `u` anywhere but that node (the cleared
  // node included: a swap). Binds both on success; u's move comes first.
  bool place_by_chain(PodId pod, const Assignment& from, const Request& req, const Rules& rules,
                      std::vector<Placed>& placed) {
    ClusterState& s = state_;
    struct Option {
      int64_t leftover;
      PodId u;
    };
    std::vector<Option> options;
    for (int i = 0; i < s.node_count(); ++i) {
      const NodeId n{i};
      if (n == rules.home) continue;
      if (req.is_gpu() && (!model_allowed(req.allowed_models, s.gpu_model(n)) || s.gpu_count(n) < req.gpu_count))
        continue;
      const auto free = s.gpu_free_milli(n);
      for (PodId u : node_pods_[i]) {
        if (!movable(u) || !s.is_bound(u) || s.assignment(u).node != n) continue;
        const Request& ur = s.request(u);
        const Assignment& ua = s.assignment(u);
        const int64_t cpu_left = s.cpu_free_milli(n) + ur.cpu_milli - req.cpu_milli;
        if (cpu_left < 0 || s.memory_free_mib(n) + ur.memory_mib < req.memory_mib) continue;
        int64_t leftover = cpu_left / 10;
        if (req.is_gpu()) {
          int ok = 0;
          int32_t tight = kGpuMilliPerGpu;
          for (int g = 0; g < s.gpu_count(n); ++g) {
            const int32_t f = free[g] + ((ua.gpu_mask >> g) & 1u ? ua.gpu_milli : 0);
            if (f >= req.gpu_milli) ++ok, tight = std::min(tight, f - req.gpu_milli);
          }
          if (ok < req.gpu_count) continue;
          if (fits(s, n, req)) continue;  // place() would have found it
          leftover = int64_t{tight} * 1000000 + leftover;
        }
        options.push_back({leftover + ur.total_gpu_milli() * 100, u});
      }
    }
    std::sort(options.begin(), options.end(),
              [](const Option& a, const Option& b) { return std::tie(a.leftover, a.u) < std::tie(b.leftover, b.u); });
    if (options.size() > 8) options.resize(8);
    for (const Option& o : options) {
      const auto mark = s.checkpoint();
      const Assignment u_from = s.assignment(o.u);
      const Request u_req = s.request(o.u);
      const NodeId n = u_from.node;
      s.unbind(o.u);
      const Assignment to{n, choose_gpus_best_fit(s.gpu_free_milli(n), req), req.is_gpu() ? req.gpu_milli : 0};
      if (s.bind(pod, req, to).is_ok()) {
        Rules ur = rules;
        ur.allow_chain = false;
        auto target = place(u_req, ur, false, n);
        if (target && s.bind(o.u, u_req, *target).is_ok()) {
          placed.push_back({o.u, u_from, *target, true});
          placed.push_back({pod, from, to, true});
          return true;
        }
      }
      s.rollback(mark);
    }
    return false;
  }

  // -------------------------------------------------------------- what-if
  // Displaces `c.victims`, admits `admit` at (c.node, c.gpu_mask) when given,
  // re-places every victim; on success replays the moves in plan order,
  // records the steps and returns true. On failure changes nothing.
  // With `dry_run`, returns the change in FGD fragmentation in `*frag_delta`
  // and rolls back even on success.
  bool try_clearing(const Clearing& c, const PendingPod* admit, Rules rules, bool dry_run = false,
                    double* frag_delta = nullptr) {
    ClusterState& s = state_;
    const auto mark = s.checkpoint();
    rules.home = c.node;
    std::vector<Placed> placed;
    std::vector<Assignment> froms;
    for (PodId v : c.victims) froms.push_back(s.assignment(v));
    for (PodId v : c.victims) s.unbind(v);
    if (admit && !s.bind(admit->id, admit->request, Assignment{c.node, c.gpu_mask, admit->request.gpu_milli}).is_ok()) {
      s.rollback(mark);
      return false;
    }
    std::vector<size_t> order(c.victims.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Request& ra = s.request(c.victims[a]);
      const Request& rb = s.request(c.victims[b]);
      return std::make_tuple(ra.total_gpu_milli(), ra.cpu_milli) > std::make_tuple(rb.total_gpu_milli(), rb.cpu_milli);
    });
    for (size_t i : order) {
      const PodId v = c.victims[i];
      const Request req = s.request(v);
      const Assignment from = froms[i];
      auto to = place(req, rules, c.must_leave[i]);
      if (to) {
        s.bind(v, req, *to);
        placed.push_back({v, from, *to});
      } else if (!(rules.allow_chain && place_by_chain(v, from, req, rules, placed))) {
        s.rollback(mark);
        return false;
      }
    }
    s.rollback(mark);

    // Plan order: moves to other nodes and chains (in search order), then
    // remaps on the cleared node, then the admission.
    std::vector<Placed> ordered;
    for (size_t i = 0; i < placed.size(); ++i)
      if (placed[i].to.node != c.node || placed[i].chained) ordered.push_back(placed[i]);
    for (size_t i = 0; i < placed.size(); ++i)
      if (placed[i].to.node == c.node && !placed[i].chained) ordered.push_back(placed[i]);

    BudgetUse use = use_;
    for (const Placed& p : ordered) {
      const PodMoveInfo& info = move_info(infos_, p.pod);
      use.add(p.pod, info, int64_t{p.from.gpu_count()} * p.from.gpu_milli,
              move_cost(info, classify_move(info, p.from.node, p.to.node)));
    }
    if (!use.within(budget_)) return false;

    std::vector<PlanStep> steps;
    std::vector<NodeId> touched;
    bool ok = true;
    auto record = [&](PlanStep step) {
      tracker_.refresh(s, step.to.node);
      if (valid(step.from.node)) tracker_.refresh(s, step.from.node);
      touched.push_back(step.to.node);
      if (valid(step.from.node)) touched.push_back(step.from.node);
      step.after = tracker_.measures(s);
      steps.push_back(std::move(step));
    };
    const double frag_before = tracker_.measures(s).frag_milli;
    for (const Placed& p : ordered) {
      const Request req = s.request(p.pod);
      if (!s.unbind(p.pod).is_ok() || !s.bind(p.pod, req, p.to).is_ok()) {
        ok = false;
        break;
      }
      const PodMoveInfo& info = move_info(infos_, p.pod);
      const MoveKind kind = classify_move(info, p.from.node, p.to.node);
      record(PlanStep{kind, p.pod, req, p.from, p.to, move_cost(info, kind), {}});
    }
    if (ok && admit) {
      const Assignment at{c.node, c.gpu_mask, admit->request.gpu_milli};
      ok = s.bind(admit->id, admit->request, at).is_ok();
      if (ok) record(PlanStep{MoveKind::kAdmit, admit->id, admit->request, Assignment{}, at, 0, {}});
    }
    if (!ok || dry_run) {
      if (ok && frag_delta) *frag_delta = tracker_.measures(s).frag_milli - frag_before;
      s.rollback(mark);
      for (NodeId n : touched) tracker_.refresh(s, n);
      return ok;
    }
    s.commit();
    // Commit: bookkeeping.
    use_ = use;
    for (PlanStep& step : steps) {
      if (step.kind == MoveKind::kAdmit) {
        ++admitted_;
        admitted_milli_ += step.request.total_gpu_milli();
        admitted_set_.insert(static_cast<int32_t>(step.pod));
      } else {
        auto& from_list = node_pods_[index(step.from.node)];
        from_list.erase(std::find(from_list.begin(), from_list.end(), step.pod));
      }
      node_pods_[index(step.to.node)].push_back(step.pod);
      lock(step.pod);
      step.after.admitted_pods = admitted_;
      step.after.admitted_gpu_milli = admitted_milli_;
      steps_.push_back(std::move(step));
    }
    ++epoch_;
    return true;
  }

  // --------------------------------------------------------------- admit
  void run_admit(DefragPlan&) {
    std::vector<size_t> order(goal_.pending.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Request& ra = goal_.pending[a].request;
      const Request& rb = goal_.pending[b].request;
      return std::make_tuple(ra.total_gpu_milli(), ra.gpu_count) > std::make_tuple(rb.total_gpu_milli(), rb.gpu_count);
    });
    std::map<ShapeKey, size_t> shape_of;
    std::vector<size_t> pod_shape(goal_.pending.size());
    for (size_t i = 0; i < goal_.pending.size(); ++i) {
      auto [it, added] = shape_of.emplace(shape_key(goal_.pending[i].request), shape_of.size());
      pod_shape[i] = it->second;
    }
    cache_.assign(shape_of.size(), std::vector<CacheEntry>(state_.node_count()));
    bad_.assign(shape_of.size(), std::vector<uint64_t>(state_.node_count(), 0));
    std::vector<std::pair<uint64_t, int>> shape_failed(shape_of.size(), {~uint64_t{0}, -1});

    const double thresholds[] = {kInf, 2000, 1000, 500, 250, 0};
    const int passes = opt_.local_search ? 2 : 1;
    for (int round = 0; round < passes; ++round) {
      Rules rules;
      rules.allow_chain = round == 1;
      chain_round_ = round == 1;
      if (chain_round_)  // estimates change meaning: forget them
        for (auto& per_shape : cache_) std::fill(per_shape.begin(), per_shape.end(), CacheEntry{});
      for (int t = 0; t < static_cast<int>(std::size(thresholds)); ++t) {
        const double thr = thresholds[t];
        const int pass_id = round * 16 + t;
        bool progress = true;
        while (progress && !out_of_time()) {
          progress = false;
          for (size_t i : order) {
            const PendingPod& pod = goal_.pending[i];
            if (admitted_set_.count(static_cast<int32_t>(pod.id))) continue;
            if (out_of_time()) return;
            const size_t shape = pod_shape[i];
            if (shape_failed[shape] == std::make_pair(epoch_, pass_id)) continue;
            const double gain = static_cast<double>(std::max<int64_t>(pod.request.total_gpu_milli(), 1));
            const double max_cost = thr == kInf ? 0 : (thr == 0 ? kInf : gain / thr);
            if (try_admit(pod, shape, max_cost, rules)) {
              progress = true;
            } else {
              shape_failed[shape] = {epoch_, pass_id};
            }
          }
        }
      }
    }
  }

  bool try_admit(const PendingPod& pod, size_t shape, double max_cost, const Rules& rules) {
    struct Cand {
      double cost;
      int node;
    };
    std::vector<Cand> cands;
    const int moves_left = remaining_moves();
    auto& cache = cache_[shape];
    for (int i = 0; i < state_.node_count(); ++i) {
      const NodeId n{i};
      const uint64_t v = state_.version(n);
      if (bad_[shape][i] == v) continue;
      CacheEntry& e = cache[i];
      if (e.version != v) {
        Clearing c;
        e.cost = plan_clearing(n, pod.request, &c);
        e.moves = static_cast<int>(c.victims.size());
        e.version = v;
      }
      if (e.cost > max_cost || e.moves > moves_left) continue;
      cands.push_back({e.cost, i});
    }
    const size_t keep = std::min<size_t>(cands.size(), std::max(1, opt_.candidates_per_pod));
    std::partial_sort(cands.begin(), cands.begin() + keep, cands.end(),
                      [](const Cand& a, const Cand& b) { return std::tie(a.cost, a.node) < std::tie(b.cost, b.node); });
    for (size_t k = 0; k < keep; ++k) {
      if (chain_round_ && chain_tries_++ >= opt_.max_chain_tries) return false;
      const NodeId n{cands[k].node};
      Clearing c;
      if (plan_clearing(n, pod.request, &c) == kInf) continue;
      if (try_clearing(c, &pod, rules)) return true;
      bad_[shape][index(n)] = state_.version(n);
    }
    return false;
  }

  // ------------------------------------------------------------ evacuate
  // free-gpus (whole_node false), free-nodes (true) and frag (by_frag).
  void run_evacuate(bool whole_node, bool by_frag) {
    const TargetWorkload* target = goal_.target.get();
    const double capacity = static_cast<double>(state_.gpu_capacity_milli());
    std::map<std::pair<int, int>, uint64_t> bad;  // (node, gpu) -> node version
    while (!out_of_time() && remaining_moves() > 0) {
      if (by_frag) {
        if (!target || capacity == 0) return;
        if (100.0 * tracker_.measures(state_).frag_milli / capacity <= goal_.frag_threshold_pct) return;
      }
      struct Cand {
        double cost;
        int32_t used;
        int node;
        int gpu;  // -1 = the whole node
      };
      std::vector<Cand> cands;
      for (int i = 0; i < state_.node_count(); ++i) {
        const NodeId n{i};
        if (state_.gpu_count(n) == 0 || node_empty(n)) continue;
        const auto free = state_.gpu_free_milli(n);
        if (whole_node) {
          double cost = 0;
          bool ok = true;
          for (PodId p : node_pods_[i]) ok = ok && movable(p), cost += cross_cost(p);
          auto it = bad.find({i, -1});
          if (ok && (it == bad.end() || it->second != state_.version(n)) &&
              static_cast<int>(node_pods_[i].size()) <= remaining_moves())
            cands.push_back({cost, static_cast<int32_t>(state_.gpu_free_total_milli(n)), i, -1});
          continue;
        }
        for (int g = 0; g < state_.gpu_count(n); ++g) {
          if (free[g] == kGpuMilliPerGpu) continue;
          double cost = 0;
          int count = 0;
          bool ok = true;
          for (PodId p : node_pods_[i]) {
            if (!(state_.assignment(p).gpu_mask & (1u << g))) continue;
            ok = ok && movable(p) && state_.request(p).is_shared();
            cost += cross_cost(p);
            ++count;
          }
          auto it = bad.find({i, g});
          if (ok && count <= remaining_moves() && (it == bad.end() || it->second != state_.version(n)))
            cands.push_back({cost, kGpuMilliPerGpu - free[g], i, g});
        }
      }
      std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
        return std::tie(a.cost, a.used, a.node, a.gpu) < std::tie(b.cost, b.used, b.node, b.gpu);
      });
      auto clearing_of = [&](const Cand& cd) {
        Clearing c;
        c.node = NodeId{cd.node};
        for (PodId p : node_pods_[cd.node]) {
          if (cd.gpu >= 0 && !(state_.assignment(p).gpu_mask & (1u << cd.gpu))) continue;
          c.victims.push_back(p);
          c.must_leave.push_back(cd.gpu < 0);
        }
        c.cost = cd.cost;
        return c;
      };
      auto rules_of = [&](const Cand& cd) {
        Rules r;
        r.reserved = cd.gpu >= 0 ? 1u << cd.gpu : 0;
        r.avoid_free_gpus = true;
        r.avoid_empty_nodes = true;
        return r;
      };
      bool progress = false;
      if (by_frag) {
        // Among the cheapest evacuations, the one lowering fragmentation most per cost.
        int best = -1;
        double best_gain = 0;
        int evaluated = 0;
        for (size_t k = 0; k < cands.size() && k < 128 && evaluated < 24; ++k) {
          double delta = 0;
          if (!try_clearing(clearing_of(cands[k]), nullptr, rules_of(cands[k]), true, &delta)) {
            bad[{cands[k].node, cands[k].gpu}] = state_.version(NodeId{cands[k].node});
            continue;
          }
          ++evaluated;
          const double gain = -delta / std::max(cands[k].cost, 1e-9);
          if (gain > best_gain) best_gain = gain, best = static_cast<int>(k);
        }
        if (best >= 0) progress = try_clearing(clearing_of(cands[best]), nullptr, rules_of(cands[best]));
      } else {
        for (size_t k = 0; k < cands.size() && k < 64 && !progress; ++k) {
          if (try_clearing(clearing_of(cands[k]), nullptr, rules_of(cands[k]))) {
            progress = true;
          } else {
            bad[{cands[k].node, cands[k].gpu}] = state_.version(NodeId{cands[k].node});
          }
        }
      }
      if (!progress) return;
    }
  }

  ClusterState state_;
  const DefragGoal& goal_;
  const DefragBudget& budget_;
  const PodMoveInfos& infos_;
  PlannerOptions opt_;
  MeasureTracker tracker_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::vector<PodId>> node_pods_;
  std::vector<char> locked_;
  BudgetUse use_;
  std::vector<PlanStep> steps_;
  size_t admitted_ = 0;
  int64_t admitted_milli_ = 0;
  std::unordered_set<int32_t> admitted_set_;
  uint64_t epoch_ = 0;
  mutable std::vector<std::pair<int32_t, int>> room_nodes_;
  mutable std::map<std::tuple<int32_t, int64_t, int64_t, int>, bool> room_cache_;
  mutable uint64_t room_epoch_ = 0;
  bool chain_round_ = false;
  int chain_tries_ = 0;
  std::vector<std::vector<CacheEntry>> cache_;
  std::vector<std::vector<uint64_t>> bad_;
};

}  // namespace

DefragPlan plan_defrag(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, const PlannerOptions& options) {
  for (const PendingPod& p : goal.pending)
    if (state.is_bound(p.id))
      throw std::invalid_argument("pending pod " + std::to_string(static_cast<int>(p.id)) + " is already bound");
  Planner planner(state, goal, budget, infos, options);
  return planner.run();
}

DefragPlan plan_and_apply(ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                          const PodMoveInfos& infos, const PlannerOptions& options) {
  DefragPlan plan = plan_defrag(state, goal, budget, infos, options);
  apply_plan(state, plan);
  return plan;
}

}  // namespace gpupack
