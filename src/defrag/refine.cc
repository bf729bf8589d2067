#include "defrag/refine.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace gpupack {

namespace {

using Clock = std::chrono::steady_clock;

// Recomputes each step's measures, the use and the plan's after/not_admitted.
void restamp(const ClusterState& state, DefragPlan& plan, const DefragGoal& goal, const PodMoveInfos& infos) {
  ClusterState work = state;
  MeasureTracker tracker(work, goal.target.get());
  plan.before = tracker.measures(work);
  plan.use = BudgetUse{};
  int admitted = 0;
  int64_t admitted_milli = 0;
  std::unordered_set<int32_t> in;
  for (PlanStep& s : plan.steps) {
    if (const std::string err = apply_step(work, s); !err.empty()) throw std::invalid_argument(err);
    if (s.kind == MoveKind::kAdmit) {
      ++admitted;
      admitted_milli += s.request.total_gpu_milli();
      in.insert(static_cast<int32_t>(s.pod));
    } else {
      plan.use.add(s.pod, move_info(infos, s.pod), int64_t{s.from.gpu_count()} * s.from.gpu_milli, s.cost);
    }
    tracker.refresh(work, s.to.node);
    if (valid(s.from.node)) tracker.refresh(work, s.from.node);
    s.after = tracker.measures(work);
    s.after.admitted_pods = admitted;
    s.after.admitted_gpu_milli = admitted_milli;
  }
  plan.after = plan.steps.empty() ? plan.before : plan.steps.back().after;
  plan.not_admitted.clear();
  for (const PendingPod& p : goal.pending)
    if (!in.count(static_cast<int32_t>(p.id))) plan.not_admitted.push_back(p.id);
}

}  // namespace

DefragPlan prune_plan(const ClusterState& state, const DefragPlan& plan, const DefragGoal& goal,
                      const PodMoveInfos& infos) {
  const auto start = Clock::now();
  ClusterState work = state;
  work.commit();
  DefragPlan out = plan;
  // Passes until one drops nothing: a move dropped early (one that took
  // space) can make a later-tried one unneeded. Within a pass, moves are
  // tried last first from the state before them (a checkpoint), replaying
  // only the steps after them.
  for (bool dropped = true; dropped;) {
    dropped = false;
    const size_t n = out.steps.size();
    std::vector<ClusterState::Checkpoint> before(n);
    for (size_t k = 0; k < n; ++k) {
      before[k] = work.checkpoint();
      if (const std::string err = apply_step(work, out.steps[k]); !err.empty())
        throw std::invalid_argument("prune_plan: step " + std::to_string(k + 1) + ": " + err);
    }
    std::vector<char> gone(n, 0);
    for (size_t k = n; k-- > 0;) {
      work.rollback(before[k]);
      if (out.steps[k].kind == MoveKind::kAdmit) continue;
      bool applies = true;
      for (size_t j = k + 1; j < n && applies; ++j)
        if (!gone[j]) applies = apply_step(work, out.steps[j]).empty();
      work.rollback(before[k]);
      if (applies) gone[k] = 1, dropped = true;
    }
    std::vector<PlanStep> kept;
    for (size_t k = 0; k < n; ++k)
      if (!gone[k]) kept.push_back(std::move(out.steps[k]));
    out.steps = std::move(kept);
  }
  restamp(state, out, goal, infos);
  out.plan_seconds = plan.plan_seconds + std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

DefragPlan refine_plan(const ClusterState& state, DefragPlan plan, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, const ReplanFn& replan, int rounds) {
  if (goal.kind != GoalKind::kAdmitPending || goal.gang) return plan;
  const size_t steps_before = plan.steps.size();
  const int64_t admitted_before = plan.after.admitted_gpu_milli;
  plan = prune_plan(state, plan, goal, infos);
  for (int round = 0; round < rounds && !plan.not_admitted.empty(); ++round) {
    const DefragBudget left = remaining_budget(budget, plan.use);
    if (left.max_moves == 0) break;
    ClusterState after = state;
    apply_plan(after, plan);
    after.commit();
    PodMoveInfos held = infos;
    DefragGoal rest = goal;
    rest.pending.clear();
    std::unordered_set<int32_t> waiting;
    for (PodId p : plan.not_admitted) waiting.insert(static_cast<int32_t>(p));
    for (const PendingPod& p : goal.pending)
      if (waiting.count(static_cast<int32_t>(p.id))) rest.pending.push_back(p);
    for (const PlanStep& s : plan.steps) {
      if (index(s.pod) >= held.size()) held.resize(index(s.pod) + 1);
      held[index(s.pod)].immovable = true;
    }
    const DefragPlan more = replan(after, rest, left, held);
    if (more.after.admitted_gpu_milli <= 0) break;
    DefragPlan joined = plan;
    joined.steps.insert(joined.steps.end(), more.steps.begin(), more.steps.end());
    joined.plan_seconds += more.plan_seconds;
    try {
      restamp(state, joined, goal, infos);
    } catch (const std::invalid_argument&) {
      break;  // a re-plan that does not apply after the plan: keep the plan
    }
    if (!joined.use.within(budget)) break;
    plan = prune_plan(state, joined, goal, infos);
  }
  if (plan.steps.size() != steps_before || plan.after.admitted_gpu_milli != admitted_before)
    plan.algorithm += " + refinement";
  return plan;
}

}  // namespace gpupack
