#include "defrag/frag_descheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "defrag/descheduler.h"
#include "frag/fgd.h"

namespace gpupack {

namespace {

constexpr int64_t kCosSimCpuBarMilli = 2000;  // the simulator's fixed bars
constexpr int32_t kCosSimGpuBarMilli = 500;

// Cosine similarity of (cpu, gpu) vectors; -1 when either is zero.
double cosine(double a_cpu, double a_gpu, double b_cpu, double b_gpu) {
  const double na = std::hypot(a_cpu, a_gpu), nb = std::hypot(b_cpu, b_gpu);
  if (na == 0 || nb == 0) return -1;
  return (a_cpu * b_cpu + a_gpu * b_gpu) / (na * nb);
}

class Run {
 public:
  Run(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget, const PodMoveInfos& infos,
      Policy& policy, std::span<const int64_t> node_rank)
      : s_(state), budget_(budget), infos_(infos), policy_(policy), node_rank_(node_rank) {
    s_.commit();
    if (goal.target) {
      target_ = goal.target;
    } else {
      std::vector<Request> requests;
      for (PodId p : s_.bound_pods()) requests.push_back(s_.request(p));
      for (const PendingPod& p : goal.pending) requests.push_back(p.request);
      target_ = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(requests));
    }
    rec_.emplace(s_, goal);
    node_pods_.resize(static_cast<size_t>(s_.node_count()));
    for (PodId p : s_.bound_pods()) node_pods_[index(s_.assignment(p).node)].push_back(p);
    for (auto& pods : node_pods_) std::sort(pods.begin(), pods.end());
  }

  double frag(NodeId n) const { return node_fragmentation_milli(*target_, s_, n); }

  bool budget_full() const { return budget_.max_moves >= 0 && rec_->plan().use.moves >= budget_.max_moves; }

  // The movable, not yet considered pod on `n` whose removal lowers F(n)
  // the most.
  std::optional<PodId> frag_victim(NodeId n) {
    const double before = frag(n);
    std::optional<PodId> best;
    double best_drop = 0;
    for (PodId p : node_pods_[index(n)]) {
      if (!eligible(p)) continue;
      const auto mark = s_.checkpoint();
      (void)s_.unbind(p);
      const double f = frag(n);
      s_.rollback(mark);
      if (before - f > best_drop) {
        best_drop = before - f;
        best = p;
      }
    }
    return best;
  }

  std::optional<PodId> cos_victim(NodeId n) {
    const double cpu_cap = static_cast<double>(std::max<int64_t>(s_.spec(n).cpu_milli, 1));
    const double gpu_cap = static_cast<double>(std::max<int64_t>(int64_t{s_.gpu_count(n)} * kGpuMilliPerGpu, 1));
    std::optional<PodId> best;
    double best_sim = 1;
    for (PodId p : node_pods_[index(n)]) {
      if (!eligible(p)) continue;
      const Request& r = s_.request(p);
      const double cpu_free = static_cast<double>(s_.cpu_free_milli(n) + r.cpu_milli);
      const double gpu_free = static_cast<double>(s_.gpu_free_total_milli(n) + r.total_gpu_milli());
      const double sim = cosine(cpu_free / cpu_cap, gpu_free / gpu_cap, static_cast<double>(r.cpu_milli) / cpu_cap,
                                static_cast<double>(r.total_gpu_milli()) / gpu_cap);
      if (sim >= 0 && sim < best_sim) {
        best_sim = sim;
        best = p;
      }
    }
    return best;
  }

  // Moves `p` off its node through the policy; false (nothing changed, the
  // pod not chosen again) when the budget or the other nodes refuse it.
  bool move(PodId p) {
    done_.insert(index(p));
    const PodMoveInfo& info = move_info(infos_, p);
    const Request req = s_.request(p);
    const Assignment from = s_.assignment(p);
    BudgetUse use = rec_->plan().use;
    const MoveKind kind = classify_move(info, from.node, NodeId{-2});  // another node
    use.add(p, info, int64_t{from.gpu_count()} * from.gpu_milli, move_cost(info, kind));
    if (!use.within(budget_)) return false;
    const auto mark = s_.checkpoint();
    (void)s_.unbind(p);
    auto to = policy_place(s_, policy_, node_rank_, req, [&](NodeId n) { return n != from.node; });
    if (!to || !s_.bind(p, req, *to).is_ok()) {
      s_.rollback(mark);
      return false;
    }
    rec_->plan().use = use;
    auto& src = node_pods_[index(from.node)];
    src.erase(std::find(src.begin(), src.end(), p));
    auto& dst = node_pods_[index(to->node)];
    dst.insert(std::lower_bound(dst.begin(), dst.end(), p), p);
    rec_->record(PlanStep{kind, p, req, from, *to, move_cost(info, kind), {}});
    return true;
  }

  DefragPlan finish(const char* algorithm, std::chrono::steady_clock::time_point start) {
    rec_->admit_pending(policy_, node_rank_);
    return rec_->finish(algorithm, start);
  }

  ClusterState& state() { return s_; }

 private:
  bool eligible(PodId p) const { return !done_.count(index(p)) && !move_info(infos_, p).immovable; }

  ClusterState s_;
  const DefragBudget& budget_;
  const PodMoveInfos& infos_;
  Policy& policy_;
  std::span<const int64_t> node_rank_;
  std::shared_ptr<const TargetWorkload> target_;
  std::optional<BaselineRecorder> rec_;        // records on s_
  std::vector<std::vector<PodId>> node_pods_;  // bound pods per node, by id
  std::unordered_set<size_t> done_;            // pods moved, or tried and left where they were
};

}  // namespace

DefragPlan plan_frag_descheduler(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                 const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                                 FragDeschedulerRule rule) {
  const auto start = std::chrono::steady_clock::now();
  Run run(state, goal, budget, infos, policy, node_rank);
  ClusterState& s = run.state();
  std::vector<NodeId> gpu_nodes;
  for (int i = 0; i < s.node_count(); ++i)
    if (s.gpu_count(NodeId{i}) > 0) gpu_nodes.push_back(NodeId{i});
  switch (rule) {
    case FragDeschedulerRule::kFragOnePod: {
      std::vector<std::pair<double, NodeId>> order;
      for (NodeId n : gpu_nodes)
        if (const double f = run.frag(n); f > 0) order.push_back({f, n});
      std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      for (const auto& [f, n] : order) {
        if (run.budget_full()) break;
        if (auto victim = run.frag_victim(n)) run.move(*victim);
      }
      return run.finish("frag-one-pod", start);
    }
    case FragDeschedulerRule::kFragMultiPod: {
      // Highest F first, ties to the lowest node index.
      using Entry = std::pair<double, int>;
      auto lower = [](const Entry& a, const Entry& b) {
        return a.first < b.first || (a.first == b.first && a.second > b.second);
      };
      std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> queue(lower);
      for (NodeId n : gpu_nodes)
        if (const double f = run.frag(n); f > 0) queue.push({f, static_cast<int>(index(n))});
      while (!queue.empty() && !run.budget_full()) {
        const NodeId n{queue.top().second};
        queue.pop();
        auto victim = run.frag_victim(n);
        if (!victim) continue;  // drops out
        run.move(*victim);      // moved or not, the pod is not chosen again
        queue.push({run.frag(n), static_cast<int>(index(n))});
      }
      return run.finish("frag-multi-pod", start);
    }
    case FragDeschedulerRule::kCosSim: {
      std::vector<NodeId> order;
      for (NodeId n : gpu_nodes) {
        if (s.cpu_free_milli(n) >= kCosSimCpuBarMilli) continue;
        const auto free = s.gpu_free_milli(n);
        if (std::any_of(free.begin(), free.end(), [](int32_t f) { return f > kCosSimGpuBarMilli; })) order.push_back(n);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](NodeId a, NodeId b) { return s.gpu_free_total_milli(a) > s.gpu_free_total_milli(b); });
      for (NodeId n : order) {
        if (run.budget_full()) break;
        if (auto victim = run.cos_victim(n)) run.move(*victim);
      }
      return run.finish("cos-sim", start);
    }
  }
  return run.finish("frag-one-pod", start);
}

}  // namespace gpupack
