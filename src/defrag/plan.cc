#include "defrag/plan.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gpupack {

namespace {

std::string step_label(size_t i, const PlanStep& s) {
  return fmt::format("step {} ({} pod {})", i + 1, move_kind_name(s.kind), static_cast<int>(s.pod));
}

}  // namespace

std::string apply_step(ClusterState& state, const PlanStep& s) {
  if (s.kind == MoveKind::kLand) {
    if (state.is_bound(s.pod)) return "landing pod is bound (it was not parked)";
    Status st = state.bind(s.pod, s.request, s.to);
    return st.is_ok() ? "" : st.message;
  }
  if (s.kind == MoveKind::kAdmit) {
    if (state.is_bound(s.pod)) return "admitted pod is already bound";
    Status st = state.bind(s.pod, s.request, s.to);
    return st.is_ok() ? "" : st.message;
  }
  if (!state.is_bound(s.pod)) return "moved pod is not bound";
  if (state.assignment(s.pod) != s.from) return "moved pod is not where the step says it is";
  const Request req = state.request(s.pod);
  if (req != s.request) return "step request differs from the bound pod's request";
  Status st = state.unbind(s.pod);
  if (!st.is_ok()) return st.message;
  if (s.parked) return "";
  st = state.bind(s.pod, req, s.to);
  return st.is_ok() ? "" : st.message;
}

void apply_plan(ClusterState& state, const DefragPlan& plan) {
  const auto mark = state.checkpoint();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const std::string err = apply_step(state, plan.steps[i]);
    if (!err.empty()) {
      state.rollback(mark);
      throw std::invalid_argument(fmt::format("defrag plan {}: {}", step_label(i, plan.steps[i]), err));
    }
  }
}

std::vector<std::string> validate_plan(const ClusterState& state, const DefragPlan& plan, const DefragGoal& goal,
                                       const DefragBudget& budget, const PodMoveInfos& infos) {
  std::vector<std::string> errors;
  ClusterState copy = state;
  MeasureTracker tracker(copy, goal.target.get());
  std::unordered_set<int32_t> pending;
  for (const PendingPod& p : goal.pending) pending.insert(static_cast<int32_t>(p.id));
  BudgetUse use;
  int admitted = 0;
  int64_t admitted_milli = 0;
  std::unordered_map<int32_t, Assignment> parked;  // pod -> where it lands
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const std::string label = step_label(i, s);
    if (s.kind == MoveKind::kAdmit) {
      if (!pending.count(static_cast<int32_t>(s.pod))) errors.push_back(label + ": pod is not pending");
    } else if (s.kind == MoveKind::kLand) {
      auto it = parked.find(static_cast<int32_t>(s.pod));
      if (it == parked.end()) {
        errors.push_back(label + ": pod was not parked");
      } else {
        if (it->second != s.to) errors.push_back(label + ": lands elsewhere than its park step says");
        parked.erase(it);
      }
    } else {
      if (s.parked && !parked.emplace(static_cast<int32_t>(s.pod), s.to).second)
        errors.push_back(label + ": pod is parked twice");
      const PodMoveInfo& info = move_info(infos, s.pod);
      if (info.immovable) errors.push_back(label + ": pod is immovable");
      if (s.kind != classify_move(info, s.from.node, s.to.node))
        errors.push_back(label + ": kind does not match the move");
      use.add(s.pod, info, int64_t{s.from.gpu_count()} * s.from.gpu_milli, move_cost(info, s.kind));
    }
    const std::string err = apply_step(copy, s);
    if (!err.empty()) {
      errors.push_back(label + ": " + err);
      break;  // later steps assume this one
    }
    if (s.kind == MoveKind::kAdmit) {
      ++admitted;
      admitted_milli += s.request.total_gpu_milli();
    }
    tracker.refresh(copy, s.to.node);
    if (valid(s.from.node)) tracker.refresh(copy, s.from.node);
    ClusterMeasures m = tracker.measures(copy);
    m.admitted_pods = admitted;
    m.admitted_gpu_milli = admitted_milli;
    if (m.used_gpu_milli != s.after.used_gpu_milli || m.free_gpus != s.after.free_gpus ||
        m.free_nodes != s.after.free_nodes || m.admitted_pods != s.after.admitted_pods ||
        std::abs(m.frag_milli - s.after.frag_milli) > 1e-3 * (1 + std::abs(m.frag_milli)))
      errors.push_back(label + ": recorded measures differ from the state after the step");
  }
  // The state's own bookkeeping, once for the whole plan (a walk over every
  // node: per step it was a few percent of a 300-move plan's planning).
  for (const std::string& inv : copy.check_invariants()) errors.push_back("after the plan: invariant: " + inv);
  for (const auto& [pod, to] : parked) errors.push_back(fmt::format("pod {} is parked and never lands", pod));
  if (!use.within(budget))
    errors.push_back(fmt::format("budget exceeded: {} moves, {} GPU milli moved, cost {}", use.moves,
                                 use.moved_gpu_milli, use.cost));
  if (use.moves != plan.use.moves) errors.push_back("plan's move count differs from its steps");
  if (goal.gang && admitted != 0 && admitted != static_cast<int>(goal.pending.size()))
    errors.push_back("gang admitted only in part");
  return errors;
}

}  // namespace gpupack
