#include "defrag/swaps.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "defrag/refine.h"
#include "defrag/search_keys.h"
#include "sched/filter.h"

namespace gpupack {

namespace {

using Clock = std::chrono::steady_clock;

// A movable single-GPU pod and the GPU it holds.
struct SwapHolder {
  PodId pod{};
  NodeId node{};
  int gpu = 0;
  int32_t milli = 0;
  int32_t gpu_free = 0;  // free milli of its GPU when indexed
};

class SwapSearch {
 public:
  SwapSearch(ClusterState& work, const PodMoveInfos& infos, const DefragBudget& budget)
      : work_(work), infos_(infos), budget_(budget) {}

  // Rebuilds the index of movable pods: per GPU, and per GPU share with the
  // freest GPUs first.
  void index() {
    on_gpu_.clear();
    by_share_.clear();
    for (PodId p : work_.bound_pods()) {
      if (!movable(p)) continue;
      const Assignment a = work_.assignment(p);
      const int g = std::countr_zero(a.gpu_mask);
      const SwapHolder h{p, a.node, g, a.gpu_milli, work_.gpu_free_milli(a.node)[static_cast<size_t>(g)]};
      on_gpu_[gpu_key(a.node, g)].push_back(h);
      by_share_[h.milli].push_back(h);
    }
    for (auto& [share, list] : by_share_)
      std::stable_sort(list.begin(), list.end(),
                       [](const SwapHolder& x, const SwapHolder& y) { return x.gpu_free > y.gpu_free; });
  }

  // Finds and applies one swap that admits `p`; appends its steps.
  bool admit(const PendingPod& p, std::vector<PlanStep>& steps) {
    const Request& r = p.request;
    for (int n = 0; n < work_.node_count(); ++n) {
      const NodeId node{n};
      if (work_.gpu_count(node) == 0 || work_.has_hardware_setup(node) || !fits_empty_plain(work_, node, r)) continue;
      const auto free = work_.gpu_free_milli(node);
      const bool cpu_short = work_.cpu_free_milli(node) < r.cpu_milli || work_.memory_free_mib(node) < r.memory_mib;
      for (int g = 0; g < work_.gpu_count(node); ++g) {
        const int32_t short_by = r.gpu_milli - free[static_cast<size_t>(g)];
        if (short_by <= 0) {
          // The GPU has room, the node lacks CPU or memory: a pod here
          // trades places with one that asks less of them.
          if (cpu_short && try_cpu_partners(p, node, g, steps)) return true;
          continue;
        }
        if (r.gpu_milli >= kGpuMilliPerGpu) continue;  // a trade leaves a pod on the GPU
        auto it = on_gpu_.find(gpu_key(node, g));
        if (it == on_gpu_.end()) continue;
        for (const SwapHolder& a : it->second)
          if (a.milli >= short_by && try_partners(p, a, short_by, steps)) return true;
      }
    }
    return false;
  }

  BudgetUse use;

 private:
  bool movable(PodId p) const { return !touched_.count(static_cast<int32_t>(p)) && trade_movable(work_, infos_, p); }

  // Partners `b` for `a` (on the receiving GPU): smaller by at least
  // `short_by`, on a GPU where `a` fits once `b` has left.
  bool try_partners(const PendingPod& p, const SwapHolder& a, int32_t short_by, std::vector<PlanStep>& steps) {
    const Request& r = p.request;
    const Request& ra = work_.request(a.pod);
    const NodeId n = a.node;
    for (auto& [share, list] : by_share_) {
      if (share > a.milli - short_by) break;
      for (const SwapHolder& b : list) {
        if (b.gpu_free + share < a.milli) break;
        if (b.pod == a.pod || (b.node == n && b.gpu == a.gpu)) continue;
        const Request& rb = work_.request(b.pod);
        if (!model_allowed(ra.allowed_models, work_.gpu_model(b.node)) ||
            !model_allowed(rb.allowed_models, work_.gpu_model(n)))
          continue;
        if (b.node != n) {
          if (work_.cpu_free_milli(b.node) + rb.cpu_milli < ra.cpu_milli ||
              work_.memory_free_mib(b.node) + rb.memory_mib < ra.memory_mib)
            continue;
          if (work_.cpu_free_milli(n) + ra.cpu_milli - rb.cpu_milli < r.cpu_milli ||
              work_.memory_free_mib(n) + ra.memory_mib - rb.memory_mib < r.memory_mib)
            continue;
        } else if (work_.cpu_free_milli(n) < r.cpu_milli || work_.memory_free_mib(n) < r.memory_mib) {
          continue;
        }
        if (apply(p, a, b, Assignment{n, 1u << a.gpu, r.gpu_milli}, steps)) return true;
        if (budget_.max_moves >= 0 && use.moves + 2 > budget_.max_moves) return false;
      }
    }
    return false;
  }

  // For `p` on (n, g), whose GPU has room: a pod `a` on another GPU of n and
  // a pod `b` elsewhere that asks less CPU and memory trade GPUs (each fits
  // where the other was once it left), freeing what p lacks on n.
  bool try_cpu_partners(const PendingPod& p, NodeId n, int g, std::vector<PlanStep>& steps) {
    const Request& r = p.request;
    const int64_t cpu_short = r.cpu_milli - work_.cpu_free_milli(n);
    const int64_t mem_short = r.memory_mib - work_.memory_free_mib(n);
    const auto free = work_.gpu_free_milli(n);
    for (int ga = 0; ga < work_.gpu_count(n); ++ga) {
      if (ga == g) continue;
      auto it = on_gpu_.find(gpu_key(n, ga));
      if (it == on_gpu_.end()) continue;
      for (const SwapHolder& a : it->second) {
        const Request& ra = work_.request(a.pod);
        if (ra.cpu_milli < cpu_short || ra.memory_mib < mem_short) continue;
        // b fits a's GPU once a left; a fits b's once b left.
        const int32_t room = a.milli + free[static_cast<size_t>(ga)];
        for (auto& [share, list] : by_share_) {
          if (share > room) break;
          for (const SwapHolder& b : list) {
            if (b.gpu_free + share < a.milli) break;
            if (b.node == n) continue;
            const Request& rb = work_.request(b.pod);
            if (ra.cpu_milli - rb.cpu_milli < cpu_short || ra.memory_mib - rb.memory_mib < mem_short) continue;
            if (work_.cpu_free_milli(b.node) + rb.cpu_milli < ra.cpu_milli ||
                work_.memory_free_mib(b.node) + rb.memory_mib < ra.memory_mib)
              continue;
            if (!model_allowed(ra.allowed_models, work_.gpu_model(b.node)) ||
                !model_allowed(rb.allowed_models, work_.gpu_model(n)))
              continue;
            if (apply(p, a, b, Assignment{n, 1u << g, r.gpu_milli}, steps)) return true;
            if (budget_.max_moves >= 0 && use.moves + 2 > budget_.max_moves) return false;
          }
        }
      }
    }
    return false;
  }

  // Applies the swap to the work state in an order that fits (plain moves
  // when one of them fits first, else `a` parked) and records its steps.
  bool apply(const PendingPod& p, const SwapHolder& a, const SwapHolder& b, const Assignment& admit_at,
             std::vector<PlanStep>& steps) {
    const Request ra = work_.request(a.pod), rb = work_.request(b.pod);
    const Assignment a_from = work_.assignment(a.pod), b_from = work_.assignment(b.pod);
    const Assignment a_to{b.node, 1u << b.gpu, ra.gpu_milli}, b_to{a.node, 1u << a.gpu, rb.gpu_milli};
    const PodMoveInfo& ia = move_info(infos_, a.pod);
    const PodMoveInfo& ib = move_info(infos_, b.pod);
    const MoveKind ka = classify_move(ia, a.node, b.node), kb = classify_move(ib, b.node, a.node);
    BudgetUse next = use;
    next.add(a.pod, ia, ra.gpu_milli, move_cost(ia, ka));
    next.add(b.pod, ib, rb.gpu_milli, move_cost(ib, kb));
    if (!next.within(budget_)) return false;

    PlanStep move_a{ka, a.pod, ra, a_from, a_to, move_cost(ia, ka), {}};
    const PlanStep move_b{kb, b.pod, rb, b_from, b_to, move_cost(ib, kb), {}};
    const auto mark = work_.checkpoint();
    std::vector<PlanStep> order;
    // b first when it fits beside a; a first when it fits beside b; else park a.
    if (apply_step(work_, move_b).empty() && apply_step(work_, move_a).empty()) {
      order = {move_b, move_a};
    } else {
      work_.rollback(mark);
      if (apply_step(work_, move_a).empty() && apply_step(work_, move_b).empty()) {
        order = {move_a, move_b};
      } else {
        work_.rollback(mark);
        move_a.parked = true;
        const PlanStep land{MoveKind::kLand, a.pod, ra, Assignment{}, a_to, 0, {}};
        if (!apply_step(work_, move_a).empty() || !apply_step(work_, move_b).empty() ||
            !apply_step(work_, land).empty()) {
          work_.rollback(mark);
          return false;
        }
        order = {move_a, move_b, land};
      }
    }
    const PlanStep admit{MoveKind::kAdmit, p.id, p.request, Assignment{}, admit_at, 0, {}};
    if (!apply_step(work_, admit).empty()) {
      work_.rollback(mark);
      return false;
    }
    order.push_back(admit);
    touched_.insert(static_cast<int32_t>(p.id));  // admitted here: never moved again
    steps.insert(steps.end(), order.begin(), order.end());
    use = next;
    touched_.insert(static_cast<int32_t>(a.pod));
    touched_.insert(static_cast<int32_t>(b.pod));
    return true;
  }

  ClusterState& work_;
  const PodMoveInfos& infos_;
  const DefragBudget& budget_;
  std::unordered_set<int32_t> touched_;
  std::unordered_map<int64_t, std::vector<SwapHolder>> on_gpu_;
  std::map<int32_t, std::vector<SwapHolder>> by_share_;
};

}  // namespace

DefragPlan plan_swaps(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                      const PodMoveInfos& infos, double time_limit_s) {
  const auto start = Clock::now();
  DefragPlan plan;
  plan.algorithm = "swaps";
  plan.goal = goal.kind;
  if (goal.kind == GoalKind::kAdmitPending && !goal.gang) {
    ClusterState work = state;
    work.commit();
    SwapSearch search(work, infos, budget);
    search.index();
    std::vector<const PendingPod*> order;
    for (const PendingPod& p : goal.pending)
      if (p.request.gpu_count == 1 && p.request.is_plain()) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(), [](const PendingPod* x, const PendingPod* y) {
      return x->request.gpu_milli > y->request.gpu_milli;
    });
    std::set<ShapeKey> failed;  // shapes with no swap since the last one found
    for (const PendingPod* p : order) {
      if (budget.max_moves >= 0 && search.use.moves + 2 > budget.max_moves) break;
      if (time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - start).count() > time_limit_s) break;
      const ShapeKey shape = shape_key(p->request);
      if (failed.count(shape)) continue;
      if (!search.admit(*p, plan.steps)) {
        failed.insert(shape);
        continue;
      }
      failed.clear();
      search.index();
    }
  }
  restamp_plan(state, plan, goal, infos);
  plan.plan_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return plan;
}

}  // namespace gpupack
