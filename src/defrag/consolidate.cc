#include "defrag/consolidate.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "defrag/frag_descheduler.h"

namespace gpupack {

namespace {

// `plan` followed by `more` (planned on the state after `plan`): admitted
// counts carried on, budget use added.
DefragPlan joined(const DefragPlan& plan, const DefragPlan& more, const PodMoveInfos& infos) {
  DefragPlan next = plan;
  for (PlanStep st : more.steps) {
    st.after.admitted_pods += plan.after.admitted_pods;
    st.after.admitted_gpu_milli += plan.after.admitted_gpu_milli;
    if (is_move(st.kind))
      next.use.add(st.pod, move_info(infos, st.pod), int64_t{st.from.gpu_count()} * st.from.gpu_milli, st.cost);
    next.steps.push_back(std::move(st));
  }
  next.not_admitted = more.not_admitted;
  if (!next.steps.empty()) next.after = next.steps.back().after;
  return next;
}

}  // namespace

DefragPlan plan_consolidate_first(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                  const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                                  const PlannerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  DefragPlan plan;
  plan.algorithm = "consolidation + greedy";
  plan.goal = goal.kind;
  plan.before = plan.after = measure_cluster(state, goal.target.get());
  for (const PendingPod& p : goal.pending) plan.not_admitted.push_back(p.id);
  if (goal.kind != GoalKind::kAdmitPending || goal.gang || goal.pending.empty()) return plan;
  std::unordered_map<size_t, const PendingPod*> pending_by_id;
  for (const PendingPod& p : goal.pending) pending_by_id.emplace(index(p.id), &p);
  ClusterState s = state;
  s.commit();
  PodMoveInfos frozen = infos;  // pods a step moved or admitted do not move again
  auto freeze = [&](const DefragPlan& steps) {
    for (const PlanStep& st : steps.steps) {
      if (index(st.pod) >= frozen.size()) frozen.resize(index(st.pod) + 1);
      frozen[index(st.pod)].immovable = true;
    }
  };
  auto rest_goal = [&] {
    DefragGoal g;
    g.kind = GoalKind::kAdmitPending;
    g.target = goal.target;
    for (PodId id : plan.not_admitted) g.pending.push_back(*pending_by_id.at(index(id)));
    return g;
  };
  auto moves_left = [&] { return budget.max_moves < 0 ? -1 : budget.max_moves - plan.moves(); };
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto out_of_time = [&] { return options.time_limit_s > 0 && elapsed_s() >= options.time_limit_s; };
  // Keeps `more` when the whole plan stays valid.
  auto keep = [&](const DefragPlan& more) {
    DefragPlan next = joined(plan, more, infos);
    if (!next.use.within(budget) || !validate_plan(state, next, goal, budget, infos).empty()) return false;
    apply_plan(s, more);
    s.commit();
    freeze(more);
    plan = std::move(next);
    return true;
  };
  for (;;) {
    const int left = moves_left();
    if (left == 0 || plan.not_admitted.empty() || out_of_time()) break;
    const DefragGoal g = rest_goal();
    std::optional<DefragPlan> round;
    for (int cap = kMinRoundMoves;; cap *= 2) {
      DefragBudget b = budget;
      b.max_moves = left < 0 ? cap : std::min(cap, left);
      DefragPlan candidate =
          plan_frag_descheduler(s, g, b, frozen, policy, node_rank, FragDeschedulerRule::kFragMultiPod);
      const bool exhausted = candidate.moves() < b.max_moves;  // a larger cap moves nothing more
      if (candidate.after.admitted_gpu_milli > (round ? round->after.admitted_gpu_milli : 0))
        round = std::move(candidate);
      if (exhausted || (left >= 0 && cap >= left) || out_of_time()) break;
    }
    if (!round || !keep(*round)) break;
  }
  if (!plan.not_admitted.empty() && moves_left() != 0 && !out_of_time()) {
    DefragBudget b = budget;
    b.max_moves = moves_left();
    PlannerOptions rest = options;
    if (options.time_limit_s > 0) rest.time_limit_s = options.time_limit_s - elapsed_s();
    const DefragPlan more = plan_defrag(s, rest_goal(), b, frozen, rest);
    if (!more.steps.empty()) keep(more);
  }
  plan.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace gpupack
