#include "defrag/refine.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace gpupack {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void restamp_plan(const ClusterState& state, DefragPlan& plan, const DefragGoal& goal, const PodMoveInfos& infos) {
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
    } else if (is_move(s.kind)) {
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

namespace {

// The index of the land step of the parked move at `k` (steps.size() if none).
size_t land_of(const std::vector<PlanStep>& steps, size_t k) {
  for (size_t j = k + 1; j < steps.size(); ++j)
    if (steps[j].kind == MoveKind::kLand && steps[j].pod == steps[k].pod) return j;
  return steps.size();
}

// The steps of `steps` that are needed (prune_plan's passes), planned on
// `work`, which is left as it was on entry.
std::vector<PlanStep> prune_steps(ClusterState& work, std::vector<PlanStep> steps) {
  const auto entry = work.checkpoint();
  // Passes until one drops nothing: a move dropped early (one that took
  // space) can make a later-tried one unneeded. Within a pass, moves are
  // tried last first from the state before them (a checkpoint), replaying
  // only the steps after them.
  for (bool dropped = true; dropped;) {
    dropped = false;
    const size_t n = steps.size();
    std::vector<ClusterState::Checkpoint> before(n);
    for (size_t k = 0; k < n; ++k) {
      before[k] = work.checkpoint();
      if (const std::string err = apply_step(work, steps[k]); !err.empty()) {
        work.rollback(entry);
        throw std::invalid_argument("prune_plan: step " + std::to_string(k + 1) + ": " + err);
      }
    }
    std::vector<char> gone(n, 0);
    for (size_t k = n; k-- > 0;) {
      work.rollback(before[k]);
      if (!is_move(steps[k].kind) || gone[k]) continue;
      // A parked move goes with its whole cycle (the steps up to its land).
      const size_t last = steps[k].parked ? land_of(steps, k) : k;
      if (last == n) continue;
      bool applies = true;
      for (size_t j = k + 1; j < n && applies; ++j)
        if (!gone[j] && j > last) applies = apply_step(work, steps[j]).empty();
      work.rollback(before[k]);
      if (!applies) continue;
      bool admits_inside = false;
      for (size_t j = k; j <= last; ++j) admits_inside = admits_inside || steps[j].kind == MoveKind::kAdmit;
      if (admits_inside) continue;
      for (size_t j = k; j <= last; ++j) gone[j] = 1;
      dropped = true;
    }
    work.rollback(entry);
    std::vector<PlanStep> kept;
    for (size_t k = 0; k < n; ++k)
      if (!gone[k]) kept.push_back(std::move(steps[k]));
    steps = std::move(kept);
  }
  return steps;
}

}  // namespace

DefragPlan prune_plan(const ClusterState& state, const DefragPlan& plan, const DefragGoal& goal,
                      const PodMoveInfos& infos) {
  const auto start = Clock::now();
  ClusterState work = state;
  work.commit();
  DefragPlan out = plan;
  out.steps = prune_steps(work, std::move(out.steps));
  restamp_plan(state, out, goal, infos);
  out.plan_seconds = plan.plan_seconds + std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

DefragPlan refine_plan(const ClusterState& state, DefragPlan plan, const DefragGoal& goal, const DefragBudget& budget,
                       const PodMoveInfos& infos, const ReplanFn& replan, int rounds, const char* suffix) {
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
      restamp_plan(state, joined, goal, infos);
    } catch (const std::invalid_argument&) {
      break;  // a re-plan that does not apply after the plan: keep the plan
    }
    if (!joined.use.within(budget)) break;
    plan = prune_plan(state, joined, goal, infos);
  }
  if (plan.steps.size() != steps_before || plan.after.admitted_gpu_milli != admitted_before) plan.algorithm += suffix;
  return plan;
}

DefragPlan trim_to_value(const ClusterState& state, DefragPlan plan, const DefragGoal& goal, const PodMoveInfos& infos,
                         double max_moves_per_gpu) {
  if (max_moves_per_gpu < 0 || goal.kind != GoalKind::kAdmitPending || goal.gang) return plan;
  const auto within = [&](int moves, int64_t admitted_milli) {
    return moves == 0 || static_cast<double>(moves) * kGpuMilliPerGpu <=
                             max_moves_per_gpu * static_cast<double>(admitted_milli) + 1e-9;
  };
  if (within(plan.use.moves, plan.after.admitted_gpu_milli)) return plan;
  const auto start = Clock::now();
  ClusterState work = state;
  work.commit();
  // The steps with only the admissions of `keep` (pod ids), pruned; their
  // moves and admitted milli.
  struct Kept {
    std::vector<PlanStep> steps;
    int moves = 0;
    int64_t milli = 0;
  };
  const auto with_admissions = [&](const std::unordered_set<int32_t>& keep) {
    std::vector<PlanStep> steps;
    for (const PlanStep& s : plan.steps)
      if (s.kind != MoveKind::kAdmit || keep.count(static_cast<int32_t>(s.pod))) steps.push_back(s);
    Kept k{prune_steps(work, std::move(steps)), 0, 0};
    for (const PlanStep& s : k.steps) {
      if (s.kind == MoveKind::kAdmit) {
        k.milli += s.request.total_gpu_milli();
      } else if (is_move(s.kind)) {
        ++k.moves;
      }
    }
    return k;
  };

  // Each admission alone: the moves it needs (its support).
  struct Candidate {
    int32_t pod = 0;
    int64_t milli = 0;
    int support = 0;
    size_t order = 0;
  };
  std::vector<Candidate> ranked;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& s = plan.steps[k];
    if (s.kind != MoveKind::kAdmit) continue;
    const int32_t pod = static_cast<int32_t>(s.pod);
    ranked.push_back({pod, s.request.total_gpu_milli(), with_admissions({pod}).moves, k});
  }
  // Fewest moves per milli first (cross-multiplied, exact), then plan order.
  std::sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    const int64_t lhs = int64_t{a.support} * std::max<int64_t>(b.milli, 1);
    const int64_t rhs = int64_t{b.support} * std::max<int64_t>(a.milli, 1);
    return lhs != rhs ? lhs < rhs : a.order < b.order;
  });
  // Build up: an admission joins when the plan with it stays within.
  std::unordered_set<int32_t> keep;
  Kept best;  // nothing admitted, no moves
  for (const Candidate& c : ranked) {
    keep.insert(c.pod);
    Kept next = with_admissions(keep);
    if (within(next.moves, next.milli)) {
      best = std::move(next);
    } else {
      keep.erase(c.pod);
    }
  }
  const double seconds_before = plan.plan_seconds;
  plan.steps = std::move(best.steps);
  restamp_plan(state, plan, goal, infos);
  plan.algorithm += " + value trim";
  plan.plan_seconds = seconds_before + std::chrono::duration<double>(Clock::now() - start).count();
  return plan;
}

}  // namespace gpupack
