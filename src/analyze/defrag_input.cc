#include "analyze/defrag_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "analyze/cluster_model.h"
#include "defrag/methods.h"
#include "defrag/plan_writers.h"
#include "io/pod_resources.h"
#include "policy/registry.h"

namespace gpupack {

std::string held_reason(const K8sPod& pod, const LiveDefragOptions& options) {
  if (pod.annotations.count("kubernetes.io/config.mirror")) return "static pod (the kubelet's own)";
  if (pod.controller_kind.empty()) return "no controller (nothing would recreate it)";
  if (pod.controller_kind == "DaemonSet") return "DaemonSet pod (belongs to its node)";
  if (auto it = pod.labels.find(options.exempt_label_key);
      !options.exempt_label_key.empty() && it != pod.labels.end() && it->second == options.exempt_label_value)
    return fmt::format("labelled {}={}", options.exempt_label_key, options.exempt_label_value);
  if (!pod.local_volumes.empty()) return fmt::format("node-local storage (volume {})", pod.local_volumes.front());
  if (pod.priority_class_name == "system-node-critical" || pod.priority_class_name == "system-cluster-critical")
    return "priority class " + pod.priority_class_name;
  return "";
}

LiveDefragInput live_defrag_input(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                                  const std::vector<K8sPdb>& pdbs, const LiveDefragOptions& options) {
  ModeledNodes modeled = model_nodes(nodes);
  LiveDefragInput in{Snapshot{ClusterState(std::move(modeled.specs)), {}, {}, {}}, {}, {}, {}};
  Snapshot& snap = in.snapshot;
  ChargeResult charged = charge_running_pods(snap.state, nodes, modeled.index, pods);
  snap.state.commit();
  in.messages = std::move(charged.messages);
  in.pods = pods;
  snap.infos.resize(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    const K8sPod& p = pods[i];
    PodMoveInfo& info = snap.infos[i];
    info.name = p.name;
    info.ns = p.namespace_name;
    const PodId id{static_cast<int32_t>(i)};
    if (p.terminal()) continue;
    if (p.node_name.empty()) {
      if (p.request.is_gpu()) snap.pending.push_back({id, p.request});
      continue;
    }
    if (!snap.state.is_bound(id)) continue;  // not charged (a conflict, an unknown node)
    std::string why = held_reason(p, options);
    if (why.empty()) {
      std::vector<const K8sPdb*> budgets;
      for (const K8sPdb& b : pdbs)
        if (b.selects(p)) budgets.push_back(&b);
      if (budgets.size() > 1) {
        why = fmt::format("{} PodDisruptionBudgets select it ({}, {}; eviction is refused)", budgets.size(),
                          budgets[0]->key(), budgets[1]->key());
      } else if (budgets.size() == 1 && budgets[0]->disruptions_allowed <= 0) {
        why = fmt::format("PodDisruptionBudget {} allows no disruption now", budgets[0]->key());
      } else if (budgets.size() == 1) {
        info.group = "pdb:" + budgets[0]->key();
        snap.max_unavailable[info.group] = budgets[0]->disruptions_allowed;
      }
    }
    if (!why.empty()) {
      info.immovable = true;
      if (snap.state.request(id).is_gpu()) in.held[p.key()] = why;
    }
  }
  return in;
}

std::string held_summary(const std::map<std::string, std::string>& held) {
  if (held.empty()) return "";
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [pod, why] : held) by_reason[why].push_back(pod);
  std::string out = fmt::format("{} running GPU pods are held in place:\n", held.size());
  for (const auto& [why, list] : by_reason) {
    out += fmt::format("  {} ({}): ", why, list.size());
    for (size_t i = 0; i < list.size() && i < 5; ++i) out += (i ? ", " : "") + list[i];
    out += list.size() > 5 ? ", ...\n" : "\n";
  }
  return out;
}

DefragReport plan_admission(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                            const std::vector<K8sPdb>& pdbs, double max_moves_pct) {
  DefragReport r;
  LiveDefragInput in = live_defrag_input(nodes, pods, pdbs);
  const Snapshot& snap = in.snapshot;
  if (snap.pending.empty()) {
    r.note = "no pending GPU pods, nothing to admit (gpupack defrag --goal free-gpus plans whole free GPUs)";
    return r;
  }
  DefragGoal goal;
  goal.kind = GoalKind::kAdmitPending;
  goal.pending = snap.pending;
  goal.target = snapshot_target(snap);
  DefragBudget budget;
  budget.max_moves = std::max(1, static_cast<int>(max_moves_pct / 100.0 * snap.state.bound_pod_count() + 1e-9));
  budget.max_unavailable = snap.max_unavailable;
  PlannerOptions opt;
  opt.threads = 2;  // the plan is the same on one thread
  auto policy = make_policy("bestfit", {42, goal.target});
  const DefragPlan plan = plan_by_method("planner", snap.state, goal, budget, snap.infos, *policy, {}, opt);
  r.available = true;
  r.plan = plan_to_json(plan, snap.state, snap.infos);
  r.text = fmt::format("(at most {} moves: {}% of {} running pods)\n", budget.max_moves, max_moves_pct,
                       snap.state.bound_pod_count()) +
           format_plan_table(plan, snap.state, snap.infos) + held_summary(in.held);
  return r;
}

}  // namespace gpupack
