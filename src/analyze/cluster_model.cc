#include "analyze/cluster_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "io/pod_resources.h"
#include "policy/gpu_choice.h"
#include "sched/filter.h"

namespace gpupack {

namespace {

// Where a pod whose annotation names its GPUs (or that holds none) is
// charged: those GPUs, with the engine's MIG instance and NUMA choice when
// it places the pod on exactly those.
Assignment held_assignment(const ClusterState& state, NodeId n, const Request& req, uint32_t mask) {
  Assignment where{n, mask, req.is_gpu() ? req.gpu_milli : 0};
  if (!req.is_plain() || state.has_hardware_setup(n)) {
    const Placement p = choose_placement(state, n, req);
    if (p.ok() && (!req.is_gpu() || p.assignment.gpu_mask == mask)) where = p.assignment;
  }
  return where;
}

// Charged in charge_pods' second pass (GPUs chosen there)?
bool charged_on_chosen_gpus(const ClusterState& state, NodeId n, const Request& req, const HeldGpus& held) {
  return held.kind == HeldGpus::Kind::kUnknown ||
         (held.kind == HeldGpus::Kind::kNone && req.is_plain() && !state.has_hardware_setup(n));
}

}  // namespace

std::string chosen_gpus_note(const K8sPod& pod, const std::string& why) {
  return fmt::format("{}: {} (charged on GPUs gpupack chose)", pod.key(), why);
}

bool charge_fits(const ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                 const K8sPod& pod) {
  const int i = node_index.find(pod.node_name);
  if (i < 0) return false;
  const NodeId n{i};
  const K8sNode& node = nodes[static_cast<size_t>(i)];
  const Request req = model_request(pod, node);
  const HeldGpus held = held_gpus(pod, node, req);
  if (charged_on_chosen_gpus(state, n, req, held)) return choose_placement(state, n, req).ok();
  return state.check_fit(req, held_assignment(state, n, req, held.gpu_mask)).is_ok();
}

ModeledNodes model_nodes(const std::vector<K8sNode>& nodes) {
  ModeledNodes m;
  m.specs.reserve(nodes.size());
  m.index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    m.specs.push_back(model_node(nodes[i]));
    m.index.assign(nodes[i].spec.name, static_cast<int>(i));
  }
  return m;
}

ChargeResult charge_running_pods(ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                                 const std::vector<K8sPod>& pods, std::span<const uint8_t> skip,
                                 const GpuChooser& choose) {
  std::vector<std::pair<PodId, const K8sPod*>> listed;
  listed.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i)
    if (i >= skip.size() || skip[i] == 0) listed.emplace_back(PodId{static_cast<int32_t>(i)}, &pods[i]);
  return charge_pods(state, nodes, node_index, listed, choose);
}

ChargeResult charge_pods(ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                         std::span<const std::pair<PodId, const K8sPod*>> pods, const GpuChooser& choose) {
  ChargeResult out;
  // (pod, node) charged in the second pass, in list order: pods whose GPU ids
  // are unknown and pods without GPUs. Their order matters: FGD's GPU choice
  // weighs the CPU left on the node, so replaying them in the order they
  // arrived repeats the choices made when they were placed one by one.
  std::vector<std::pair<size_t, int>> unknown;  // (position in `pods`, node)
  auto conflict = [&](const K8sPod& pod, const std::string& why) {
    ++out.conflicts;
    out.messages.push_back(fmt::format("{}: {}", pod.key(), why));
  };
  for (size_t i = 0; i < pods.size(); ++i) {
    const auto [id, pod_ptr] = pods[i];
    const K8sPod& pod = *pod_ptr;
    if (pod.node_name.empty() || pod.terminal()) continue;
    if (state.is_bound(id)) continue;
    const int node_at = node_index.find(pod.node_name);
    if (node_at < 0) {
      conflict(pod, fmt::format("node {} is not in the node list", pod.node_name));
      continue;
    }
    const K8sNode& node = nodes[static_cast<size_t>(node_at)];
    const NodeId n{node_at};
    const Request req = model_request(pod, node);
    const HeldGpus held = held_gpus(pod, node, req);
    if (charged_on_chosen_gpus(state, n, req, held)) {
      if (!held.why.empty()) out.messages.push_back(chosen_gpus_note(pod, held.why));
      unknown.emplace_back(i, node_at);
      continue;
    }
    const Status st = state.bind(id, req, held_assignment(state, n, req, held.gpu_mask));
    if (!st.is_ok()) conflict(pod, fmt::format("over-committed on node {}: {}", pod.node_name, st.message));
  }
  for (const auto& [i, node] : unknown) {
    const auto [id, pod_ptr] = pods[i];
    const K8sPod& pod = *pod_ptr;
    const Request req = model_request(pod, nodes[static_cast<size_t>(node)]);
    std::string why;
    Placement p = choose ? choose(state, NodeId{node}, req) : choose_placement(state, NodeId{node}, req, {}, &why);
    if (!p.ok() && why.empty()) (void)choose_placement(state, NodeId{node}, req, {}, &why);
    if (!p.ok()) {
      conflict(pod, fmt::format("over-committed on node {}: {} GPUs x {} milli claimed, {}", pod.node_name,
                                req.gpu_count, req.gpu_milli, why));
      continue;
    }
    const Status st = state.bind(id, req, p.assignment);
    if (!st.is_ok()) {
      conflict(pod, fmt::format("over-committed on node {}: {}", pod.node_name, st.message));
      continue;
    }
    if (req.is_gpu() || !req.mig_devices.empty()) out.unknown_ids.push_back(id);
  }
  return out;
}

std::optional<Request> workload_request(const K8sPod& pod, const NameIndex& node_index,
                                        const std::vector<K8sNode>& nodes) {
  if (pod.request.is_gpu()) return pod.request;
  // A pod without GPUs competes for GPU nodes' CPU while it is pending or
  // when it runs on one (FGD's CPU-only classes); elsewhere it does not.
  if (!pod.node_name.empty()) {
    const int i = node_index.find(pod.node_name);
    if (i < 0 || nodes[static_cast<size_t>(i)].spec.gpu_count == 0) return std::nullopt;
  }
  return pod.request;
}

std::shared_ptr<TargetWorkload> expected_workload(const std::vector<const K8sPod*>& pods, const NameIndex& node_index,
                                                  const std::vector<K8sNode>& nodes) {
  WorkloadTally tally;
  for (size_t i = 0; i < pods.size(); ++i)
    if (std::optional<Request> r = workload_request(*pods[i], node_index, nodes)) tally.add(i, *r);
  return tally.target();
}

void WorkloadTally::add(uint64_t seq, const Request& r) {
  Class& c = classes_[Key{r.cpu_milli, r.gpu_milli, r.gpu_count, r.allowed_models}];
  if (c.seqs.empty()) c.request = r;
  if (!c.seqs.insert(seq).second) throw std::logic_error("WorkloadTally: sequence number added twice");
  ++total_;
  if (r.is_gpu()) ++gpu_pods_;
}

void WorkloadTally::remove(uint64_t seq, const Request& r) {
  auto it = classes_.find(Key{r.cpu_milli, r.gpu_milli, r.gpu_count, r.allowed_models});
  if (it == classes_.end() || it->second.seqs.erase(seq) == 0)
    throw std::logic_error("WorkloadTally: removing a pod that was not added");
  if (it->second.seqs.empty()) classes_.erase(it);
  --total_;
  if (r.is_gpu()) --gpu_pods_;
}

std::shared_ptr<TargetWorkload> WorkloadTally::target() const {
  std::vector<Request> reqs;
  if (gpu_pods_ == 0) {
    // No pod holds or asks for a GPU: a default mix of whole GPUs and shares.
    for (int32_t g : {1, 1, 1, 2, 4, 8}) reqs.push_back(Request{4000LL * g, 0, g, kGpuMilliPerGpu, 0});
    for (int32_t m : {250, 500, 500}) reqs.push_back(Request{2000, 0, 1, m, 0});
    return std::make_shared<TargetWorkload>(TargetWorkload::from_requests(reqs));
  }
  // First appearance = the lowest sequence number of each class.
  std::vector<std::pair<uint64_t, const Class*>> firsts;
  firsts.reserve(classes_.size());
  for (const auto& [key, c] : classes_) firsts.emplace_back(*c.seqs.begin(), &c);
  std::sort(firsts.begin(), firsts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<TargetClass> order;
  order.reserve(firsts.size());
  for (const auto& [seq, c] : firsts) {
    const Request& r = c->request;
    order.push_back({r.cpu_milli, r.gpu_count, r.gpu_milli, r.allowed_models, static_cast<int64_t>(c->seqs.size()), 0});
  }
  return std::make_shared<TargetWorkload>(TargetWorkload::from_classes(std::move(order), total_));
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
