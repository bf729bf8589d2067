#include "defrag/plan_writers.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "frag/cluster_metrics.h"

namespace gpupack {

namespace {

std::string gpu_list(uint32_t mask) {
  std::string out;
  for (int g = 0; g < 32; ++g) {
    if (!(mask & (1u << g))) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

std::string where(const ClusterState& s, const Assignment& a) {
  if (!valid(a.node)) return "-";
  return fmt::format("{}[{}]", s.node_name(a.node), gpu_list(a.gpu_mask));
}

double alloc_pct(const ClusterState& s, const ClusterMeasures& m) {
  return s.gpu_capacity_milli() ? 100.0 * static_cast<double>(m.used_gpu_milli) / s.gpu_capacity_milli() : 0;
}

nlohmann::json measures_json(const ClusterState& s, const ClusterMeasures& m) {
  return {{"gpu_used_milli", m.used_gpu_milli},
          {"alloc_pct", alloc_pct(s, m)},
          {"free_gpus", m.free_gpus},
          {"free_nodes", m.free_nodes},
          {"frag_milli", m.frag_milli},
          {"admitted_pods", m.admitted_pods},
          {"admitted_gpu_milli", m.admitted_gpu_milli}};
}

nlohmann::json assignment_json(const ClusterState& s, const Assignment& a) {
  if (!valid(a.node)) return nullptr;
  nlohmann::json gpus = nlohmann::json::array();
  for (int g = 0; g < 32; ++g)
    if (a.gpu_mask & (1u << g)) gpus.push_back(g);
  return {{"node", s.node_name(a.node)}, {"gpus", gpus}, {"gpu_milli", a.gpu_milli}};
}

// "namespace/name", or the name alone in the default namespace.
std::string qualified_name(const PodMoveInfos& infos, PodId pod) {
  const PodMoveInfo& info = move_info(infos, pod);
  const std::string name = pod_display_name(infos, pod);
  return info.ns.empty() || info.ns == "default" ? name : info.ns + "/" + name;
}

}  // namespace

std::optional<double> moves_per_gpu_admitted(const DefragPlan& plan) {
  if (plan.use.moves == 0 || plan.after.admitted_gpu_milli <= 0) return std::nullopt;
  return plan.use.moves / (static_cast<double>(plan.after.admitted_gpu_milli) / kGpuMilliPerGpu);
}

std::optional<int64_t> repack_free_gpus_max(const ClusterState& state) {
  const ClusterMetrics m = cluster_metrics(state, TargetWorkload{}, {}, false);
  const auto r = repack_bound(m);
  if (!r) return std::nullopt;
  // freeable_gpus is rounded to 1e-6 GPUs.
  return m.gpu_total - m.gpus_in_use + static_cast<int64_t>(std::floor(r->freeable_gpus + 1e-6));
}

std::string format_plan_table(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos) {
  std::string out = fmt::format("{:>4} {:<8} {:<28} {:<22} {:<22} {:>6} {:>8} {:>9}\n", "step", "kind", "pod", "from",
                                "to", "cost", "alloc %", "free GPUs");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const std::string kind = s.parked ? std::string("park") : move_kind_name(s.kind);
    out += fmt::format("{:>4} {:<8} {:<28} {:<22} {:<22} {:>6.2f} {:>8.2f} {:>9}\n", i + 1, kind,
                       qualified_name(infos, s.pod), where(state, s.from), where(state, s.to), s.cost,
                       alloc_pct(state, s.after), s.after.free_gpus);
  }
  const auto per_gpu = moves_per_gpu_admitted(plan);
  const auto most = repack_free_gpus_max(state);
  out += fmt::format(
      "{} plan, goal {}: {} moves ({} GPU milli moved, cost {:.2f}), {} pods admitted ({} GPU milli{}); GPU "
      "allocation {:.2f}% -> {:.2f}%, whole free GPUs {} -> {}{}, free nodes {} -> {}; {} pending pods not admitted; "
      "planned in {:.3f} s\n",
      plan.algorithm, goal_kind_name(plan.goal), plan.use.moves, plan.use.moved_gpu_milli, plan.use.cost,
      plan.after.admitted_pods, plan.after.admitted_gpu_milli,
      per_gpu ? fmt::format(", {:.1f} moves per GPU", *per_gpu) : "", alloc_pct(state, plan.before),
      alloc_pct(state, plan.after), plan.before.free_gpus, plan.after.free_gpus,
      most ? fmt::format(" (no plan ends with more than {})", *most) : "", plan.before.free_nodes,
      plan.after.free_nodes, plan.not_admitted.size(), plan.plan_seconds);
  return out;
}

nlohmann::json plan_to_json(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos) {
  nlohmann::json j;
  j["algorithm"] = plan.algorithm;
  j["goal"] = goal_kind_name(plan.goal);
  j["moves"] = plan.use.moves;
  j["moved_gpu_milli"] = plan.use.moved_gpu_milli;
  j["cost"] = plan.use.cost;
  j["plan_seconds"] = plan.plan_seconds;
  const auto per_gpu = moves_per_gpu_admitted(plan);
  j["moves_per_gpu_admitted"] = per_gpu ? nlohmann::json(*per_gpu) : nlohmann::json(nullptr);
  const auto most = repack_free_gpus_max(state);
  j["repack_free_gpus_max"] = most ? nlohmann::json(*most) : nlohmann::json(nullptr);
  j["before"] = measures_json(state, plan.before);
  j["after"] = measures_json(state, plan.after);
  auto& steps = j["steps"] = nlohmann::json::array();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const PodMoveInfo& info = move_info(infos, s.pod);
    steps.push_back({{"step", i + 1},
                     {"kind", move_kind_name(s.kind)},
                     {"pod", pod_display_name(infos, s.pod)},
                     {"namespace", info.ns},
                     {"from", assignment_json(state, s.from)},
                     {"to", assignment_json(state, s.to)},
                     {"cost", s.cost},
                     {"parked", s.parked},
                     {"after", measures_json(state, s.after)}});
  }
  auto& na = j["not_admitted"] = nlohmann::json::array();
  for (PodId p : plan.not_admitted) na.push_back(pod_display_name(infos, p));
  return j;
}

nlohmann::json eviction_list(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos) {
  nlohmann::json items = nlohmann::json::array();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    if (s.kind != MoveKind::kMigrate && s.kind != MoveKind::kEvict) continue;
    const PodMoveInfo& info = move_info(infos, s.pod);
    items.push_back({{"apiVersion", "policy/v1"},
                     {"kind", "Eviction"},
                     {"metadata",
                      {{"name", pod_display_name(infos, s.pod)},
                       {"namespace", info.ns},
                       {"annotations",
                        {{"gpupack.io/step", std::to_string(i + 1)},
                         {"gpupack.io/move-kind", move_kind_name(s.kind)},
                         {"gpupack.io/from-node", std::string(state.node_name(s.from.node))},
                         {"gpupack.io/target-node", std::string(state.node_name(s.to.node))},
                         {"gpupack.io/target-gpus", gpu_list(s.to.gpu_mask)}}}}}});
    // A parked move's target frees only later in its cycle: do not wait for it.
    if (s.parked) items.back()["metadata"]["annotations"]["gpupack.io/parked"] = "true";
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

}  // namespace gpupack
