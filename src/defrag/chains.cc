#include "defrag/chains.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "defrag/refine.h"
#include "defrag/search_keys.h"
#include "sched/filter.h"

namespace gpupack {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTriesPerLink = 3;

// A GPU's free milli when indexed.
struct Hole {
  int32_t free = 0;
  NodeId node{};
  int gpu = 0;
};

// A movable pod, its GPU and that GPU's free milli when indexed.
struct ChainHolder {
  PodId pod{};
  NodeId node{};
  int gpu = 0;
  int32_t hole = 0;
};

// One link: `pod` moves to (node, gpu).
struct Link {
  PodId pod{};
  NodeId node{};
  int gpu = 0;
};

class ChainSearch {
 public:
  ChainSearch(ClusterState& work, const PodMoveInfos& infos, const DefragBudget& budget, Clock::time_point deadline,
              bool limited)
      : work_(work), infos_(infos), budget_(budget), deadline_(deadline), limited_(limited) {}

  // Rebuilds the index: movable pods per GPU (smallest share first) and
  // every GPU with free milli (smallest first).
  void index() {
    on_gpu_.clear();
    holes_.clear();
    no_home_.clear();
    for (PodId p : work_.bound_pods()) {
      if (!movable(p)) continue;
      const Assignment a = work_.assignment(p);
      on_gpu_[gpu_key(a.node, std::countr_zero(a.gpu_mask))].push_back(p);
    }
    for (auto& [k, list] : on_gpu_)
      std::stable_sort(list.begin(), list.end(), [&](PodId x, PodId y) {
        return std::make_pair(work_.request(x).gpu_milli, x) < std::make_pair(work_.request(y).gpu_milli, y);
      });
    for (int n = 0; n < work_.node_count(); ++n) {
      const NodeId node{n};
      if (work_.gpu_count(node) == 0 || work_.has_hardware_setup(node)) continue;
      const auto free = work_.gpu_free_milli(node);
      for (int g = 0; g < work_.gpu_count(node); ++g)
        if (free[static_cast<size_t>(g)] > 0) holes_.push_back({free[static_cast<size_t>(g)], node, g});
    }
    std::stable_sort(holes_.begin(), holes_.end(), [](const Hole& x, const Hole& y) { return x.free < y.free; });
    by_size_.clear();
    max_hole_ = 0;
    for (const auto& [k, list] : on_gpu_)
      for (PodId p : list) {
        const Assignment a = work_.assignment(p);
        const int g = std::countr_zero(a.gpu_mask);
        const int32_t hole = work_.gpu_free_milli(a.node)[static_cast<size_t>(g)];
        by_size_[a.gpu_milli].push_back({p, a.node, g, hole});
        max_hole_ = std::max(max_hole_, hole);
      }
    for (auto& [size, list] : by_size_)
      std::stable_sort(list.begin(), list.end(), [](const ChainHolder& x, const ChainHolder& y) {
        return std::make_tuple(-x.hole, static_cast<int>(x.node), x.gpu) <
               std::make_tuple(-y.hole, static_cast<int>(y.node), y.gpu);
      });
  }

  // Finds and applies one chain of at most `max_length` moves that admits
  // `p`, searching depths from `min_length` up (shortest first within a
  // depth); appends its steps.
  bool admit(const PendingPod& p, int min_length, int max_length, std::vector<PlanStep>& steps) {
    const std::vector<Start> from = starts(p.request);
    for (int length = std::max(min_length, 2); length <= max_length; ++length) {
      if (budget_.max_moves >= 0 && use.moves + length > budget_.max_moves) return false;
      if (admit_with(p, from, length, steps)) return true;
      if (out_of_time()) return false;
    }
    return false;
  }

  bool out_of_time() const { return limited_ && Clock::now() > deadline_; }

  BudgetUse use;

 private:
  bool movable(PodId p) const { return !touched_.count(static_cast<int32_t>(p)) && trade_movable(work_, infos_, p); }

  bool in_chain(NodeId n, int g) const {
    return std::any_of(chain_gpus_.begin(), chain_gpus_.end(),
                       [&](const std::pair<NodeId, int>& c) { return c.first == n && c.second == g; });
  }

  // Can pod `x` (request `rx`) go to (n, g) once `leaving` (or nobody) has left?
  bool room_for(const Request& rx, NodeId n, const Request* leaving) const {
    if (!model_allowed(rx.allowed_models, work_.gpu_model(n))) return false;
    const int64_t cpu = work_.cpu_free_milli(n) + (leaving ? leaving->cpu_milli : 0);
    const int64_t mem = work_.memory_free_mib(n) + (leaving ? leaving->memory_mib : 0);
    return cpu >= rx.cpu_milli && mem >= rx.memory_mib;
  }

  // The pods whose leaving would make room for `p` on their GPU, fewest
  // milli short first (then the largest pod: more room to close a cycle).
  struct Start {
    int32_t short_by = 0;  // GPU milli p lacks on its GPU (0: it lacks CPU or memory)
    int32_t milli = 0;
    NodeId node{};
    int gpu = 0;  // a's GPU, where a cycle closes
    PodId pod{};
    int admit_gpu = 0;  // p's GPU (a's, unless p lacks only CPU or memory)
  };
  std::vector<Start> starts(const Request& r) const {
    std::vector<Start> out;
    for (int n = 0; n < work_.node_count(); ++n) {
      const NodeId node{n};
      if (work_.gpu_count(node) == 0 || work_.has_hardware_setup(node) || !fits_empty_plain(work_, node, r)) continue;
      const auto free = work_.gpu_free_milli(node);
      const int64_t cpu_short = r.cpu_milli - work_.cpu_free_milli(node);
      const int64_t mem_short = r.memory_mib - work_.memory_free_mib(node);
      for (int g = 0; g < work_.gpu_count(node); ++g) {
        const int32_t short_by = r.gpu_milli - free[static_cast<size_t>(g)];
        if (short_by <= 0) {
          // Room on this GPU, not on the node: a pod on another GPU that
          // asks at least the CPU and memory p lacks leaves.
          if (cpu_short <= 0 && mem_short <= 0) continue;
          for (int ga = 0; ga < work_.gpu_count(node); ++ga) {
            auto it = ga == g ? on_gpu_.end() : on_gpu_.find(gpu_key(node, ga));
            if (it == on_gpu_.end()) continue;
            for (PodId a : it->second) {
              const Request& ra = work_.request(a);
              if (ra.cpu_milli >= cpu_short && ra.memory_mib >= mem_short)
                out.push_back({0, ra.gpu_milli, node, ga, a, g});
            }
          }
          continue;
        }
        if (r.gpu_milli >= kGpuMilliPerGpu) continue;  // a chain leaves a pod on the GPU
        auto it = on_gpu_.find(gpu_key(node, g));
        if (it == on_gpu_.end()) continue;
        for (PodId a : it->second) {
          const Request& ra = work_.request(a);
          if (ra.gpu_milli >= short_by && room_for(r, node, &ra))
            out.push_back({short_by, ra.gpu_milli, node, g, a, g});
        }
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Start& x, const Start& y) {
      return std::make_pair(x.short_by, -x.milli) < std::make_pair(y.short_by, -y.milli);
    });
    return out;
  }

  bool admit_with(const PendingPod& p, const std::vector<Start>& from, int length, std::vector<PlanStep>& steps) {
    const Request& r = p.request;
    for (const Start& st : from) {
      if (out_of_time()) return false;
      const Request& ra = work_.request(st.pod);
      const int32_t free = work_.gpu_free_milli(st.node)[static_cast<size_t>(st.gpu)];
      chain_.clear();
      chain_gpus_.assign(1, {st.node, st.gpu});
      if (st.admit_gpu != st.gpu) chain_gpus_.push_back({st.node, st.admit_gpu});
      closed_ = false;
      close_node_ = st.node;
      close_gpu_ = st.gpu;
      // What a's GPU holds for the last pod of a cycle (beside p when p goes there).
      close_milli_ = free + ra.gpu_milli - (st.admit_gpu == st.gpu ? r.gpu_milli : 0);
      close_cpu_ = work_.cpu_free_milli(st.node) + ra.cpu_milli - r.cpu_milli;
      close_mem_ = work_.memory_free_mib(st.node) + ra.memory_mib - r.memory_mib;
      if (home(st.pod, length - 1) && apply(p, st.node, st.admit_gpu, steps)) return true;
    }
    return false;
  }

  // Places `x` with at most `extra` more moves (pods leaving the GPU it
  // goes to); appends the links, `x`'s first. False leaves the chain as it was.
  bool home(PodId x, int extra) {
    const Request& rx = work_.request(x);
    const int32_t size = rx.gpu_milli;
    const auto first_fit =
        std::lower_bound(holes_.begin(), holes_.end(), size, [](const Hole& h, int32_t s) { return h.free < s; });
    // As it is: the tightest hole that takes it.
    for (auto h = first_fit; h != holes_.end(); ++h) {
      if (in_chain(h->node, h->gpu) || work_.gpu_free_milli(h->node)[static_cast<size_t>(h->gpu)] < size ||
          !room_for(rx, h->node, nullptr))
        continue;
      chain_.push_back({x, h->node, h->gpu});
      return true;
    }
    // Back on the pending pod's GPU (a cycle: the first pod is parked).
    if (!chain_.empty() && size <= close_milli_ && rx.cpu_milli <= close_cpu_ && rx.memory_mib <= close_mem_ &&
        model_allowed(rx.allowed_models, work_.gpu_model(close_node_))) {
      chain_.push_back({x, close_node_, close_gpu_});
      closed_ = true;
      return true;
    }
    if (extra == 0) return false;
    // A shape that found no home at this depth with at least this much room
    // to close a cycle finds none now either (less room closes fewer).
    const std::pair<ShapeKey, int> shape{shape_key(rx), extra};
    const Room room{close_milli_, close_cpu_, close_mem_};
    auto& failed = no_home_[shape];
    for (const Room& f : failed)
      if (f.milli >= room.milli && f.cpu >= room.cpu && f.mem >= room.mem) return false;
    // Into a hole it does not fit as it is, with a smaller pod there leaving
    // first: the smallest such pods first (the most room made per link).
    int tries = 0;
    for (auto it = by_size_.lower_bound(size - max_hole_); it != by_size_.end() && it->first < size; ++it) {
      const int32_t need = size - it->first;  // the hole the pod's GPU must have
      for (const ChainHolder& b : it->second) {
        if (b.hole < need) break;
        if (in_chain(b.node, b.gpu)) continue;
        const Request& rb = work_.request(b.pod);
        if (!room_for(rx, b.node, &rb)) continue;
        chain_.push_back({x, b.node, b.gpu});
        chain_gpus_.push_back({b.node, b.gpu});
        if (home(b.pod, extra - 1)) return true;
        chain_.pop_back();
        chain_gpus_.pop_back();
        if (++tries >= kTriesPerLink) break;
      }
      if (tries >= kTriesPerLink) break;
    }
    if (failed.size() < 16) failed.push_back(room);
    return false;
  }

  // Applies the chain, last link first, then the admission; records the steps.
  bool apply(const PendingPod& p, NodeId node, int g, std::vector<PlanStep>& steps) {
    std::vector<PlanStep> order;
    BudgetUse next = use;
    auto move = [&](const Link& l, bool parked) {
      const Request& rq = work_.request(l.pod);
      const Assignment from = work_.assignment(l.pod);
      const PodMoveInfo& info = move_info(infos_, l.pod);
      const MoveKind kind = classify_move(info, from.node, l.node);
      PlanStep step{kind, l.pod, rq, from, Assignment{l.node, 1u << l.gpu, rq.gpu_milli}, move_cost(info, kind), {}};
      step.parked = parked;
      next.add(l.pod, info, rq.gpu_milli, move_cost(info, kind));
      return step;
    };
    if (!closed_) {
      for (auto l = chain_.rbegin(); l != chain_.rend(); ++l) order.push_back(move(*l, false));
    } else {
      // Park the first pod, move the others last first, land the first.
      const PlanStep park = move(chain_.front(), true);
      order.push_back(park);
      for (auto l = chain_.rbegin(); l + 1 != chain_.rend(); ++l) order.push_back(move(*l, false));
      order.push_back(PlanStep{MoveKind::kLand, park.pod, park.request, Assignment{}, park.to, 0, {}});
    }
    if (!next.within(budget_)) return false;
    order.push_back(PlanStep{
        MoveKind::kAdmit, p.id, p.request, Assignment{}, Assignment{node, 1u << g, p.request.gpu_milli}, 0, {}});
    const auto mark = work_.checkpoint();
    for (const PlanStep& s : order) {
      if (!apply_step(work_, s).empty()) {
        work_.rollback(mark);
        return false;
      }
    }
    steps.insert(steps.end(), order.begin(), order.end());
    use = next;
    for (const Link& l : chain_) touched_.insert(static_cast<int32_t>(l.pod));
    touched_.insert(static_cast<int32_t>(p.id));  // admitted here: never moved again
    return true;
  }

  ClusterState& work_;
  const PodMoveInfos& infos_;
  const DefragBudget& budget_;
  const Clock::time_point deadline_;
  const bool limited_;
  std::unordered_set<int32_t> touched_;
  std::unordered_map<int64_t, std::vector<PodId>> on_gpu_;
  std::vector<Hole> holes_;
  std::map<int32_t, std::vector<ChainHolder>> by_size_;  // movable pods by GPU share, freest GPU first
  int32_t max_hole_ = 0;
  std::vector<Link> chain_;
  std::vector<std::pair<NodeId, int>> chain_gpus_;
  // The cycle may close at the pending pod's GPU: what room it leaves there.
  NodeId close_node_{};
  int close_gpu_ = 0;
  int32_t close_milli_ = 0;
  int64_t close_cpu_ = 0, close_mem_ = 0;
  bool closed_ = false;
  struct Room {
    int32_t milli = 0;
    int64_t cpu = 0, mem = 0;
  };
  // Per pod shape and depth, the rooms to close a cycle with which it found
  // no home, since the last index().
  std::map<std::pair<ShapeKey, int>, std::vector<Room>> no_home_;
};

}  // namespace

DefragPlan plan_chains(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, int max_length, double time_limit_s, int min_length) {
  const auto start = Clock::now();
  DefragPlan plan;
  plan.algorithm = "chains";
  plan.goal = goal.kind;
  if (goal.kind == GoalKind::kAdmitPending && !goal.gang && max_length >= std::max(min_length, 2)) {
    ClusterState work = state;
    work.commit();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(time_limit_s > 0 ? time_limit_s : 0));
    ChainSearch search(work, infos, budget, deadline, time_limit_s > 0);
    search.index();
    std::vector<const PendingPod*> order;
    for (const PendingPod& p : goal.pending)
      if (p.request.gpu_count == 1 && p.request.is_plain()) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(), [](const PendingPod* x, const PendingPod* y) {
      return x->request.gpu_milli > y->request.gpu_milli;
    });
    std::set<ShapeKey> failed;  // shapes with no chain (not retried)
    for (const PendingPod* p : order) {
      if (budget.max_moves >= 0 && search.use.moves + std::max(min_length, 2) > budget.max_moves) break;
      if (search.out_of_time()) break;
      const ShapeKey shape = shape_key(p->request);
      if (failed.count(shape)) continue;
      if (!search.admit(*p, min_length, max_length, plan.steps)) {
        failed.insert(shape);
        continue;
      }
      search.index();
    }
  }
  restamp_plan(state, plan, goal, infos);
  plan.plan_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return plan;
}

}  // namespace gpupack
