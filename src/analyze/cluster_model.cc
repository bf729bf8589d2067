#include "analyze/cluster_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "io/pod_resources.h"
#include "policy/gpu_choice.h"
#include "sched/filter.h"

namespace gpupack {

ChargeResult charge_running_pods(ClusterState& state, const std::vector<K8sNode>& nodes,
                                 const std::unordered_map<std::string, int>& node_index,
                                 const std::vector<K8sPod>& pods, std::span<const uint8_t> skip,
                                 const GpuChooser& choose) {
  ChargeResult out;
  // (pod, node) charged in the second pass, in list order: pods whose GPU ids
  // are unknown and pods without GPUs. Their order matters: FGD's GPU choice
  // weighs the CPU left on the node, so replaying them in the order they
  // arrived repeats the choices made when they were placed one by one.
  std::vector<std::pair<size_t, int>> unknown;
  auto conflict = [&](const K8sPod& pod, const std::string& why) {
    ++out.conflicts;
    out.messages.push_back(fmt::format("{}: {}", pod.key(), why));
  };
  for (size_t i = 0; i < pods.size(); ++i) {
    const K8sPod& pod = pods[i];
    if (pod.node_name.empty() || pod.terminal() || (i < skip.size() && skip[i] != 0)) continue;
    if (state.is_bound(PodId{static_cast<int32_t>(i)})) continue;
    auto it = node_index.find(pod.node_name);
    if (it == node_index.end()) {
      conflict(pod, fmt::format("node {} is not in the node list", pod.node_name));
      continue;
    }
    const K8sNode& node = nodes[static_cast<size_t>(it->second)];
    const NodeId n{it->second};
    const Request req = model_request(pod, node);
    const HeldGpus held = held_gpus(pod, node, req);
    if (held.kind == HeldGpus::Kind::kNone && req.is_plain() && !state.has_hardware_setup(n)) {
      unknown.emplace_back(i, it->second);
      continue;
    }
    if (held.kind == HeldGpus::Kind::kUnknown) {
      if (!held.why.empty())
        out.messages.push_back(fmt::format("{}: {} (charged on GPUs gpupack chose)", pod.key(), held.why));
      unknown.emplace_back(i, it->second);
      continue;
    }
    Assignment where{n, held.gpu_mask, req.is_gpu() ? req.gpu_milli : 0};
    if (!req.is_plain() || state.has_hardware_setup(n)) {
      // Keep the GPUs the annotation names; the engine fills in the rest
      // (MIG instance, NUMA node) when it places the pod on exactly those.
      const Placement p = choose_placement(state, n, req);
      if (p.ok() && (!req.is_gpu() || p.assignment.gpu_mask == held.gpu_mask)) where = p.assignment;
    }
    const Status st = state.bind(PodId{static_cast<int32_t>(i)}, req, where);
    if (!st.is_ok()) conflict(pod, fmt::format("over-committed on node {}: {}", pod.node_name, st.message));
  }
  for (const auto& [i, node] : unknown) {
    const K8sPod& pod = pods[i];
    const Request req = model_request(pod, nodes[static_cast<size_t>(node)]);
    std::string why;
    Placement p = choose ? choose(state, NodeId{node}, req) : choose_placement(state, NodeId{node}, req, {}, &why);
    if (!p.ok() && why.empty()) (void)choose_placement(state, NodeId{node}, req, {}, &why);
    if (!p.ok()) {
      conflict(pod, fmt::format("over-committed on node {}: {} GPUs x {} milli claimed, {}", pod.node_name,
                                req.gpu_count, req.gpu_milli, why));
      continue;
    }
    const Status st = state.bind(PodId{static_cast<int32_t>(i)}, req, p.assignment);
    if (!st.is_ok()) {
      conflict(pod, fmt::format("over-committed on node {}: {}", pod.node_name, st.message));
      continue;
    }
    if (req.is_gpu() || !req.mig_devices.empty()) out.unknown_ids.push_back(PodId{static_cast<int32_t>(i)});
  }
  return out;
}

std::shared_ptr<TargetWorkload> expected_workload(const std::vector<const K8sPod*>& pods,
                                                  const std::unordered_map<std::string, int>& node_index,
                                                  const std::vector<K8sNode>& nodes) {
  std::vector<Request> reqs;
  bool any_gpu = false;
  for (const K8sPod* p : pods) {
    if (p->request.is_gpu()) {
      any_gpu = true;
      reqs.push_back(p->request);
      continue;
    }
    // A pod without GPUs competes for GPU nodes' CPU while it is pending or
    // when it runs on one (FGD's CPU-only classes); elsewhere it does not.
    if (!p->node_name.empty()) {
      auto it = node_index.find(p->node_name);
      if (it == node_index.end() || nodes[static_cast<size_t>(it->second)].spec.gpu_count == 0) continue;
    }
    reqs.push_back(p->request);
  }
  if (!any_gpu) {
    reqs.clear();
    for (int32_t g : {1, 1, 1, 2, 4, 8}) reqs.push_back(Request{4000LL * g, 0, g, kGpuMilliPerGpu, 0});
    for (int32_t m : {250, 500, 500}) reqs.push_back(Request{2000, 0, 1, m, 0});
  }
  return std::make_shared<TargetWorkload>(TargetWorkload::from_requests(reqs));
}

std::vector<Request> probe_requests(const std::vector<K8sNode>& nodes, const std::vector<const K8sPod*>& pending,
                                    const TargetWorkload& target) {
  std::vector<Request> probes;
  for (const K8sPod* p : pending) {
    if (!p->request.is_gpu() || nodes.empty()) continue;
    Request r = model_request(*p, nodes.front());
    r.mig_devices.clear();
    if (std::find(probes.begin(), probes.end(), r) == probes.end()) probes.push_back(std::move(r));
  }
  if (probes.empty()) {
    for (const TargetClass& c : target.classes)
      if (c.gpu_count > 0) probes.push_back(Request{c.cpu_milli, 0, c.gpu_count, c.gpu_milli, c.allowed_models});
  }
  return probes;
}

std::string node_gate(const K8sNode& node, const K8sPod& pod) {
  const Request& r = pod.request;
  if (r.is_gpu() && r.allowed_models != 0 && node.spec.gpu_count > 0 && !node.gpu_model_known)
    return fmt::format("model: node {} has GPU product \"{}\" not in the catalog", node.spec.name, node.gpu_product);
  if (r.is_gpu() && r.scope_required && r.gpu_scope != GpuScope::kAny && !node.declares(r.gpu_scope))
    return fmt::format("topology: node {} declares no {} groups ({} annotation), the pod requires its GPUs in one",
                       node.spec.name, to_string(r.gpu_scope), annotations::kGpuTopology);
  return "";
}

std::string pending_reason(const ClusterState& state, const std::vector<K8sNode>& nodes, const K8sPod& pod) {
  std::array<int, kDimensionCount> counts{};
  for (size_t n = 0; n < nodes.size(); ++n) {
    Dimension d = Dimension::kNone;
    if (std::string gate = node_gate(nodes[n], pod); !gate.empty())
      d = gate.rfind("model:", 0) == 0 ? Dimension::kModel : Dimension::kTopology;
    else
      d = failed_dimension(state, NodeId{static_cast<int32_t>(n)}, model_request(pod, nodes[n]));
    if (d == Dimension::kNone) return "schedulable";
    ++counts[static_cast<size_t>(d)];
  }
  size_t best = 1;
  for (size_t d = 1; d < counts.size(); ++d)
    if (counts[d] > counts[best]) best = d;
  return counts[best] > 0 ? std::string(to_string(static_cast<Dimension>(best))) : "no_nodes";
}

}  // namespace gpupack
