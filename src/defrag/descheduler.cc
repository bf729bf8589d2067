#include "defrag/descheduler.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>
#include <vector>

#include "sched/scheduler.h"

namespace gpupack {

namespace {

double gpu_util_pct(const ClusterState& s, NodeId n) {
  const int64_t cap = int64_t{s.gpu_count(n)} * kGpuMilliPerGpu;
  return cap == 0 ? 0 : 100.0 * static_cast<double>(cap - s.gpu_free_total_milli(n)) / static_cast<double>(cap);
}

}  // namespace

DefragPlan plan_descheduler(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                            const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                            const DeschedulerOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  const bool high = opt.strategy == DeschedulerStrategy::kHighNodeUtilization;
  ClusterState s = state;
  s.commit();
  BaselineRecorder rec(s, goal);
  DefragPlan& plan = rec.plan();

  std::vector<std::vector<PodId>> node_pods(s.node_count());
  for (PodId p : s.bound_pods()) node_pods[index(s.assignment(p).node)].push_back(p);
  std::vector<NodeId> sources;
  for (int i = 0; i < s.node_count(); ++i) {
    const NodeId n{i};
    if (s.gpu_count(n) == 0) continue;
    const double u = gpu_util_pct(s, n);
    if (high ? (u > 0 && u < opt.low_pct) : u > opt.high_pct) sources.push_back(n);
  }
  std::stable_sort(sources.begin(), sources.end(), [&](NodeId a, NodeId b) {
    return high ? gpu_util_pct(s, a) < gpu_util_pct(s, b) : gpu_util_pct(s, a) > gpu_util_pct(s, b);
  });
  std::vector<char> underutilized(s.node_count(), 0);
  for (int i = 0; i < s.node_count(); ++i)
    underutilized[i] = s.gpu_count(NodeId{i}) > 0 && gpu_util_pct(s, NodeId{i}) < opt.low_pct;

  bool budget_left = true;
  for (NodeId src : sources) {
    if (!budget_left) break;
    std::vector<PodId> pods = node_pods[index(src)];
    std::stable_sort(pods.begin(), pods.end(),
                     [&](PodId a, PodId b) { return s.request(a).total_gpu_milli() < s.request(b).total_gpu_milli(); });
    for (PodId p : pods) {
      if (!high && gpu_util_pct(s, src) <= opt.high_pct) break;
      const PodMoveInfo& info = move_info(infos, p);
      if (info.immovable) continue;
      const Request req = s.request(p);
      const Assignment from = s.assignment(p);
      BudgetUse use = plan.use;
      const MoveKind kind = classify_move(info, src, NodeId{-2});  // another node
      use.add(p, info, int64_t{from.gpu_count()} * from.gpu_milli, move_cost(info, kind));
      if (!use.within(budget)) {
        if (budget.max_moves >= 0 && plan.use.moves >= budget.max_moves) budget_left = false;
        continue;
      }
      const auto mark = s.checkpoint();
      s.unbind(p);
      auto to = policy_place(s, policy, node_rank, req,
                             [&](NodeId n) { return n != src && (high || underutilized[index(n)]); });
      if (!to || !s.bind(p, req, *to).is_ok()) {
        s.rollback(mark);
        continue;
      }
      plan.use = use;
      rec.record(PlanStep{kind, p, req, from, *to, move_cost(info, kind), {}});
    }
  }
  rec.admit_pending(policy, node_rank);
  return rec.finish(high ? "high-node-utilization" : "low-node-utilization", start);
}

BaselineRecorder::BaselineRecorder(ClusterState& state, const DefragGoal& goal)
    : s_(state), goal_(goal), tracker_(state, goal.target.get()) {
  plan_.goal = goal.kind;
  plan_.before = tracker_.measures(s_);
}

void BaselineRecorder::record(PlanStep step) {
  tracker_.refresh(s_, step.to.node);
  if (valid(step.from.node)) tracker_.refresh(s_, step.from.node);
  step.after = tracker_.measures(s_);
  step.after.admitted_pods = admitted_;
  step.after.admitted_gpu_milli = admitted_milli_;
  plan_.steps.push_back(std::move(step));
}

void BaselineRecorder::admit_pending(Policy& policy, std::span<const int64_t> node_rank) {
  for (const PendingPod& p : goal_.pending) {
    auto to = policy_place(s_, policy, node_rank, p.request, [](NodeId) { return true; });
    if (!to || !s_.bind(p.id, p.request, *to).is_ok()) {
      plan_.not_admitted.push_back(p.id);
      continue;
    }
    ++admitted_;
    admitted_milli_ += p.request.total_gpu_milli();
    record(PlanStep{MoveKind::kAdmit, p.id, p.request, Assignment{}, *to, 0, {}});
  }
}

DefragPlan BaselineRecorder::finish(std::string algorithm, std::chrono::steady_clock::time_point start) {
  plan_.algorithm = std::move(algorithm);
  plan_.after = plan_.steps.empty() ? plan_.before : plan_.steps.back().after;
  plan_.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(plan_);
}

std::optional<Assignment> policy_place(const ClusterState& state, Policy& policy, std::span<const int64_t> node_rank,
                                       const Request& req, std::span<const uint8_t> mask) {
  Scheduler scheduler(policy, std::vector<int64_t>(node_rank.begin(), node_rank.end()));
  scheduler.set_explain_failures(false);
  scheduler.set_node_mask(mask);
  const Decision d = scheduler.decide(state, req);
  if (!d.placed()) return std::nullopt;
  return d.assignment;
}

}  // namespace gpupack
