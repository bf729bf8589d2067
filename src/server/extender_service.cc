#include "server/extender_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <set>
#include <stdexcept>

#include "policy/gpu_choice.h"
#include "policy/registry.h"
#include "sched/filter.h"
#include "sim/synthetic.h"

namespace gpupack {

namespace {

constexpr std::string_view kNvidiaPrefix = "nvidia.com/";

// GPU memory a pod occupies on each of its GPUs: its gpupack.io/gpu-memory-mib
// annotation, else its share of the GPU's memory.
int64_t pod_gpu_memory_mib(const K8sPod& pod, const Request& req, int64_t gpu_memory_mib) {
  if (pod.gpu_memory_mib > 0) return pod.gpu_memory_mib;
  if (gpu_memory_mib <= 0 || !req.is_gpu()) return 0;
  // Rounded down, so that shares adding up to a whole GPU fit its memory.
  return gpu_memory_mib * req.gpu_milli / kGpuMilliPerGpu;
}

std::shared_ptr<TargetWorkload> default_target() {
  SyntheticOptions o;
  o.node_count = 200;
  std::vector<NodeSpec> nodes = synthetic_nodes(o);
  int64_t cap = 0;
  for (const NodeSpec& n : nodes) cap += int64_t{n.gpu_count} * kGpuMilliPerGpu;
  Workload w = synthetic_workload(o, cap);
  return std::make_shared<TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
}

std::string unknown_resource(const K8sPod& pod) {
  for (const auto& [name, amount] : pod.extended) {
    if (name.compare(0, kNvidiaPrefix.size(), kNvidiaPrefix) == 0 && amount > 0)
      return fmt::format("Pod {}: unknown GPU resource \"{}\" (gpupack understands nvidia.com/gpu, "
                         "nvidia.com/gpu.shared and nvidia.com/mig-<profile>)",
                         pod.key(), name);
  }
  return "";
}

}  // namespace

std::string dimension_label(Dimension d) { return std::string(to_string(d)); }

ExtenderService::ExtenderService(std::string policy_name, uint64_t seed)
    : policy_name_(std::move(policy_name)), seed_(seed) {
  target_ = default_target();
  policy_ = make_policy(policy_name_, {seed_, target_});
  state_ = std::make_unique<ClusterState>(std::vector<NodeSpec>{});
}

ExtenderService::~ExtenderService() = default;

void ExtenderService::set_binder(Binder* binder) {
  std::lock_guard lock(mu_);
  binder_ = binder;
}

bool ExtenderService::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

std::vector<std::string> ExtenderService::unattributed() const {
  std::lock_guard lock(mu_);
  return unattributed_;
}

void ExtenderService::refresh_target_locked() {
  std::vector<Request> reqs;
  for (const PodEntry& e : pods_)
    if (e.pod.request.is_gpu()) reqs.push_back(e.pod.request);
  target_ = reqs.empty() ? default_target()
                         : std::make_shared<TargetWorkload>(TargetWorkload::from_requests(reqs));
  policy_ = make_policy(policy_name_, {seed_, target_});
}

ExtenderService::Carried ExtenderService::carry_locked() const {
  Carried c;
  c.now = std::chrono::steady_clock::now();
  for (const PodEntry& e : pods_) {
    c.first_seen[e.pod.key()] = e.first_seen;
    if (e.bound && e.bound_here_at && c.now - *e.bound_here_at < std::chrono::seconds(kAssumeBindS)) {
      auto a = e.pod.annotations.find(std::string(annotations::kAssignedGpus));
      c.assumed[e.pod.key()] = Carried::Assumed{e.pod.uid, e.pod.node_name,
                                                a == e.pod.annotations.end() ? "" : a->second, *e.bound_here_at};
    }
    // Only pods the cluster objects have never shown: one they showed and no
    // longer do was deleted.
    if (!e.from_call_at) continue;
    const bool recent_bind = e.bound && e.bound_here_at &&
                             c.now - *e.bound_here_at < std::chrono::seconds(kKeepAbsentBoundS);
    const bool recent_call = !e.bound && c.now - *e.from_call_at < std::chrono::seconds(kKeepAbsentPendingS);
    if (recent_bind || recent_call) c.recent.push_back({e.pod, e.object, e.bound_here_at, e.from_call_at});
  }
  return c;
}

void ExtenderService::swap_model_locked(ExtenderService& other) {
  std::swap(policy_, other.policy_);
  std::swap(target_, other.target_);
  std::swap(nodes_, other.nodes_);
  std::swap(node_index_, other.node_index_);
  std::swap(pods_, other.pods_);
  std::swap(pod_index_, other.pod_index_);
  std::swap(state_, other.state_);
  std::swap(gpu_mem_used_, other.gpu_mem_used_);
  std::swap(mig_used_, other.mig_used_);
  std::swap(unattributed_, other.unattributed_);
  std::swap(ready_, other.ready_);
}

std::vector<std::string> ExtenderService::set_cluster(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                                     std::vector<nlohmann::json> pod_objects) {
  // The new model is built on the side and swapped in, so that filter and
  // prioritize wait only for the swap (a rebuild of thousands of nodes takes
  // tens of milliseconds). A bind that lands meanwhile is carried over by
  // building again; under a stream of binds the last try holds the lock.
  for (int attempt = 0; attempt < 2; ++attempt) {
    Carried carried;
    uint64_t before = 0;
    {
      std::lock_guard lock(mu_);
      carried = carry_locked();
      before = mutations_;
    }
    ExtenderService fresh(policy_name_, seed_);
    {
      std::lock_guard fresh_lock(fresh.mu_);
      fresh.load_locked(nodes, pods, pod_objects, carried);
    }
    std::lock_guard lock(mu_);
    if (mutations_ == before) {
      swap_model_locked(fresh);
      ++mutations_;
      return unattributed_;
    }
  }  // `fresh` (holding the old model now) is freed outside the lock
  std::lock_guard lock(mu_);
  load_locked(std::move(nodes), std::move(pods), std::move(pod_objects), carry_locked());
  ++mutations_;
  return unattributed_;
}

void ExtenderService::load_locked(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                  std::vector<nlohmann::json> pod_objects, const Carried& carried) {
  const auto now = carried.now;
  const auto& assumed = carried.assumed;
  const auto& first_seen = carried.first_seen;
  nodes_ = std::move(nodes);
  node_index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) node_index_[nodes_[i].spec.name] = static_cast<int>(i);
  pods_.clear();
  pod_index_.clear();
  unattributed_.clear();
  std::vector<K8sPod> kept;
  std::vector<nlohmann::json> kept_objects;
  std::vector<std::optional<std::chrono::steady_clock::time_point>> kept_assumed, kept_from_call;
  for (size_t i = 0; i < pods.size(); ++i) {
    K8sPod& p = pods[i];
    if (p.terminal() || pod_index_.count(p.key())) continue;
    nlohmann::json object = i < pod_objects.size() ? std::move(pod_objects[i]) : nlohmann::json();
    std::optional<std::chrono::steady_clock::time_point> bound_here;
    auto a = assumed.find(p.key());
    if (a != assumed.end() && p.node_name.empty() && (p.uid.empty() || p.uid == a->second.uid)) {
      // The API has not caught up with a bind made here: keep it.
      p.node_name = a->second.node;
      if (object.is_object()) object["spec"]["nodeName"] = a->second.node;
      if (!a->second.annotation.empty()) {
        p.annotations[std::string(annotations::kAssignedGpus)] = a->second.annotation;
        p.assigned = parse_assigned_gpus(a->second.annotation);
        if (object.is_object())
          object["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = a->second.annotation;
      }
      bound_here = a->second.at;
    }
    pod_index_[p.key()] = static_cast<int>(kept.size());
    kept.push_back(std::move(p));
    kept_objects.push_back(std::move(object));
    kept_assumed.push_back(bound_here);
    kept_from_call.push_back(std::nullopt);
  }
  // Recent pods the new objects lack altogether (see kKeepAbsent*).
  for (const Carried::Recent& r : carried.recent) {
    if (pod_index_.count(r.pod.key())) continue;
    pod_index_[r.pod.key()] = static_cast<int>(kept.size());
    kept.push_back(r.pod);
    kept_objects.push_back(r.object);
    kept_assumed.push_back(r.bound_here_at);
    kept_from_call.push_back(r.from_call_at);
  }
  RebuiltState rebuilt = rebuild_assignments(nodes_, kept);
  for (size_t i = 0; i < kept.size(); ++i) {
    auto seen = first_seen.find(kept[i].key());
    PodEntry& e = pods_.emplace_back();
    e.pod = std::move(kept[i]);
    e.object = std::move(kept_objects[i]);
    e.first_seen = seen == first_seen.end() ? now : seen->second;
    e.bound_here_at = kept_assumed[i];
    e.from_call_at = kept_from_call[i];
  }
  for (const RebuiltPod& b : rebuilt.bound) {
    PodEntry& e = pods_[b.pod_index];
    e.bound = true;
    e.request = b.request;
    e.assignment = b.assignment;
  }
  // MIG pods: CPU/memory on the node plus the MIG devices they hold.
  for (const std::string& msg : rebuilt.unattributed) {
    std::string key = msg.substr(0, msg.find(": "));
    auto it = pod_index_.find(key);
    if (it != pod_index_.end()) {
      PodEntry& e = pods_[it->second];
      if (e.pod.is_mig() && node_index_.count(e.pod.node_name)) {
        e.bound = true;
        e.request = e.pod.request;
        e.assignment = Assignment{NodeId{node_index_[e.pod.node_name]}, 0, 0};
        continue;
      }
    }
    unattributed_.push_back(msg);
  }
  refresh_target_locked();
  rebuild_state_locked();
  ready_ = true;
}

void ExtenderService::rebuild_state_locked() {
  std::vector<NodeSpec> specs;
  specs.reserve(nodes_.size());
  for (const K8sNode& n : nodes_) specs.push_back(n.spec);
  state_ = std::make_unique<ClusterState>(std::move(specs));
  gpu_mem_used_.assign(nodes_.size(), {});
  for (size_t i = 0; i < nodes_.size(); ++i) gpu_mem_used_[i].assign(nodes_[i].spec.gpu_count, 0);
  mig_used_.assign(nodes_.size(), {});
  for (size_t i = 0; i < pods_.size(); ++i) {
    PodEntry& e = pods_[i];
    if (!e.bound) continue;
    Status s = state_->bind(PodId{static_cast<int32_t>(i)}, e.request, e.assignment);
    if (!s.is_ok()) {
      unattributed_.push_back(fmt::format("{}: {}", e.pod.key(), s.message));
      e.bound = false;
      continue;
    }
    charge_locked(e, +1);
  }
  state_->commit();
}

void ExtenderService::charge_locked(PodEntry& e, int sign) {
  const size_t n = index(e.assignment.node);
  const int64_t cap = nodes_[n].gpu_memory_mib;
  const int64_t mem = pod_gpu_memory_mib(e.pod, e.request, cap);
  for (int g = 0; g < nodes_[n].spec.gpu_count; ++g)
    if (e.assignment.gpu_mask >> g & 1u) gpu_mem_used_[n][g] += sign * mem;
  for (const auto& [profile, count] : e.pod.mig_devices) mig_used_[n][profile] += sign * count;
}

int ExtenderService::node_index_locked(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

int ExtenderService::add_node_locked(const nlohmann::json& object, std::string* error) {
  try {
    K8sNode node = parse_node(object);
    const int idx = static_cast<int>(nodes_.size());
    node_index_[node.spec.name] = idx;
    nodes_.push_back(std::move(node));
    return idx;
  } catch (const std::exception& e) {
    *error = e.what();
    return -1;
  }
}

int ExtenderService::pod_index_locked(const K8sPod& pod, const nlohmann::json& object) {
  auto it = pod_index_.find(pod.key());
  if (it != pod_index_.end()) {
    PodEntry& e = pods_[it->second];
    if (!e.bound) {  // newest object while pending
      e.pod = pod;
      e.object = object;
    }
    return it->second;
  }
  const int idx = static_cast<int>(pods_.size());
  pod_index_[pod.key()] = idx;
  PodEntry& e = pods_.emplace_back();
  e.pod = pod;
  e.object = object;
  e.first_seen = std::chrono::steady_clock::now();
  e.from_call_at = e.first_seen;
  return idx;
}

std::optional<K8sPod> ExtenderService::parse_args_pod(const nlohmann::json& pod, std::string* error) const {
  try {
    K8sPod p = parse_pod(pod);
    if (std::string why = unknown_resource(p); !why.empty()) {
      *error = why;
      return std::nullopt;
    }
    return p;
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

namespace {

// GPU topology for gpupack.io/gpu-scope (see docs/KUBERNETES.md): groups of
// a node's GPUs at one level, read from the ClusterState's per-GPU ids.
int scope_group(const ClusterState& s, NodeId n, int g, GpuScope scope) {
  switch (scope) {
    case GpuScope::kNvlink: return s.gpu_nvlink_domain(n, g);
    case GpuScope::kPcieSwitch: return s.gpu_pcie_switch(n, g);
    case GpuScope::kNuma: return s.gpu_numa(n, g);
    default: return -1;
  }
}

// Bit g = GPU g is in the group `id` at `scope`.
uint32_t scope_members(const ClusterState& s, NodeId n, GpuScope scope, int id) {
  uint32_t m = 0;
  for (int g = 0; g < s.gpu_count(n); ++g)
    if (scope_group(s, n, g, scope) == id) m |= 1u << g;
  return m;
}

// GPUs in the largest group at `scope` (0 when the node has none).
int largest_group(const ClusterState& s, NodeId n, GpuScope scope) {
  int best = 0;
  for (int g = 0; g < s.gpu_count(n); ++g) {
    const int id = scope_group(s, n, g, scope);
    if (id >= 0) best = std::max(best, std::popcount(scope_members(s, n, scope, id)));
  }
  return best;
}

// The `eligible` GPUs (bit g = GPU g) of the smallest group at `scope` that
// holds at least `count` of them, lowest group id on ties; 0 when none does.
// The same rule as the engine's in-node choice (policy/gpu_choice.h).
uint32_t aligned_set(const ClusterState& s, NodeId n, GpuScope scope, uint32_t eligible, int count) {
  uint32_t best = 0;
  int best_size = 0;
  for (int g = 0; g < s.gpu_count(n); ++g) {
    const int id = scope_group(s, n, g, scope);
    if (id < 0 || g != std::countr_zero(scope_members(s, n, scope, id))) continue;  // each group once
    const uint32_t members = scope_members(s, n, scope, id);
    if (std::popcount(members & eligible) < count) continue;
    if (best == 0 || std::popcount(members) < best_size) {
      best = members & eligible;
      best_size = std::popcount(members);
    }
  }
  return best;
}

}  // namespace

ExtenderService::Fit ExtenderService::check_node_locked(int n, const K8sPod& pod, const std::vector<int64_t>* mem_override,
                                                        const std::map<std::string, int64_t>* mig_override) const {
  const K8sNode& node = nodes_[n];
  const NodeId id{n};
  Fit f;
  if (pod.is_mig()) {
    const auto& used = mig_override ? *mig_override : mig_used_[n];
    for (const auto& [profile, count] : pod.mig_devices) {
      auto a = node.mig_devices.find(profile);
      const int64_t alloc = a == node.mig_devices.end() ? 0 : a->second;
      auto u = used.find(profile);
      const int64_t in_use = u == used.end() ? 0 : u->second;
      if (alloc < count) {
        return {Dimension::kMigSlot, true,
                fmt::format("mig_slot: node {} offers {} MIG {} devices, {} requested", node.spec.name, alloc,
                            profile, count)};
      }
      if (alloc - in_use < count) {
        return {Dimension::kMigSlot, false,
                fmt::format("mig_slot: node {} has {} free MIG {} devices, {} requested", node.spec.name,
                            alloc - in_use, profile, count)};
      }
    }
  }
  const Request req = request_on(pod, node);
  if (req.is_gpu() && !node.gpu_model_known && req.allowed_models != 0 && node.spec.gpu_count > 0) {
    return {Dimension::kModel, true,
            fmt::format("model: node {} has GPU product \"{}\" not in the catalog", node.spec.name,
                        node.gpu_product)};
  }
  Status s = explain_fit(*state_, id, req);
  const bool unresolvable = s.code == Status::Code::kUnschedulableAndUnresolvable;
  if (!s.is_ok() && unresolvable) {
    return {s.dimension, true, fmt::format("{}: {}", to_string(s.dimension), s.message)};
  }
  // A required scope on a node that cannot offer it, free or not.
  const bool scoped = req.is_gpu() && req.scope_required && req.gpu_scope != GpuScope::kAny;
  const std::string_view scope = to_string(req.gpu_scope);
  if (scoped && !node.declares(req.gpu_scope)) {
    return {Dimension::kTopology, true,
            fmt::format("topology: node {} declares no {} groups ({} annotation), the pod requires its GPUs in one",
                        node.spec.name, scope, annotations::kGpuTopology)};
  }
  if (scoped && largest_group(*state_, id, req.gpu_scope) < req.gpu_count) {
    return {Dimension::kTopology, true,
            fmt::format("topology: node {}: its largest {} group has {} GPUs, {} requested in one", node.spec.name,
                        scope, largest_group(*state_, id, req.gpu_scope), req.gpu_count)};
  }
  // A topology failure of the engine (counting free milli only) is reported
  // below with the GPU memory taken into account, in one wording.
  const bool engine_topology = !s.is_ok() && scoped && s.dimension == Dimension::kTopology;
  if (!s.is_ok() && !engine_topology) {
    return {s.dimension, false, fmt::format("{}: {}", to_string(s.dimension), s.message)};
  }
  // GPUs with the milli and (when the node's GPU memory is known) the memory free.
  const auto free_milli = state_->gpu_free_milli(id);
  const auto& used = mem_override ? *mem_override : gpu_mem_used_[n];
  const int64_t mem = req.is_gpu() ? pod_gpu_memory_mib(pod, req, node.gpu_memory_mib) : 0;
  uint32_t eligible = 0;
  for (size_t g = 0; g < free_milli.size(); ++g)
    if (free_milli[g] >= req.gpu_milli && (node.gpu_memory_mib <= 0 || node.gpu_memory_mib - used[g] >= mem))
      eligible |= 1u << g;
  if (req.is_gpu() && node.gpu_memory_mib > 0) {
    if (mem > node.gpu_memory_mib) {
      return {Dimension::kGpuMemory, true,
              fmt::format("gpu_memory: node {} GPUs have {} MiB, {} MiB requested per GPU", node.spec.name,
                          node.gpu_memory_mib, mem)};
    }
    const int ok = std::popcount(eligible);
    if (ok < req.gpu_count) {
      return {Dimension::kGpuMemory, false,
              fmt::format("gpu_memory: node {}: {} GPUs with {} MiB and {} milli free, {} needed", node.spec.name,
                          ok, mem, req.gpu_milli, req.gpu_count)};
    }
  }
  // Enough GPUs are free, but are enough of them in one group?
  if (scoped && aligned_set(*state_, id, req.gpu_scope, eligible, req.gpu_count) == 0) {
    return {Dimension::kTopology, false,
            node.gpu_memory_mib > 0
                ? fmt::format("topology: node {}: no {} group has {} GPUs with {} milli and {} MiB free "
                              "({} such GPUs on the node)",
                              node.spec.name, scope, req.gpu_count, req.gpu_milli, mem, std::popcount(eligible))
                : fmt::format("topology: node {}: no {} group has {} GPUs with {} milli free ({} such GPUs on the node)",
                              node.spec.name, scope, req.gpu_count, req.gpu_milli, std::popcount(eligible))};
  }
  if (engine_topology) return {Dimension::kTopology, false, fmt::format("topology: {}", s.message)};
  return f;
}

std::vector<int> ExtenderService::resolve_candidates_locked(const ExtenderArgs& args, std::vector<std::string>& names,
                                                            std::map<std::string, std::string>& unresolvable,
                                                            std::vector<size_t>* positions) {
  std::vector<int> idx;
  bool added = false;
  if (args.node_texts) {
    names.reserve(args.node_texts->size());
    idx.reserve(args.node_texts->size());
    if (positions) positions->reserve(args.node_texts->size());
    for (size_t k = 0; k < args.node_texts->size(); ++k) {
      const NodeText& node = (*args.node_texts)[k];
      int i = node_index_locked(node.name);
      if (i < 0) {  // a new node: read its object (rare, off the hot path)
        std::string err;
        i = add_node_locked(nlohmann::json::parse(node.json.begin(), node.json.end()), &err);
        if (i < 0) {
          unresolvable[node.name] = "node object rejected: " + err;
          continue;
        }
        added = true;
      }
      names.push_back(node.name);
      idx.push_back(i);
      if (positions) positions->push_back(k);
    }
  } else if (args.nodes) {
    names.reserve(args.nodes->size());
    for (const nlohmann::json& obj : *args.nodes) {
      std::string name = obj.at("metadata").at("name").get<std::string>();
      int i = node_index_locked(name);
      if (i < 0) {
        std::string err;
        i = add_node_locked(obj, &err);
        if (i < 0) {
          unresolvable[name] = "node object rejected: " + err;
          continue;
        }
        added = true;
      }
      names.push_back(std::move(name));
      idx.push_back(i);
    }
  } else if (args.node_names) {
    names.reserve(args.node_names->size());
    for (const std::string& name : *args.node_names) {
      const int i = node_index_locked(name);
      if (i < 0) {
        unresolvable[name] = fmt::format("node {} is unknown to gpupack", name);
        continue;
      }
      names.push_back(name);
      idx.push_back(i);
    }
  }
  if (added) rebuild_state_locked();
  return idx;
}

ExtenderFilterResult ExtenderService::filter(const ExtenderArgs& args) {
  std::lock_guard lock(mu_);
  std::string error;
  std::optional<K8sPod> pod = parse_args_pod(args.pod, &error);
  if (!pod) {
    ExtenderFilterResult r;
    r.error = error;
    return r;
  }
  const int pi = pod_index_locked(*pod, args.pod);
  std::vector<std::string> names;
  std::map<std::string, std::string> failed, unresolvable;
  std::vector<size_t> positions;  // index in args.node_texts of each candidate
  std::vector<int> idx = resolve_candidates_locked(args, names, unresolvable, &positions);
  std::vector<size_t> passed;  // positions in names/idx
  std::array<int, kDimensionCount> counts{};
  for (size_t k = 0; k < idx.size(); ++k) {
    Fit f = check_node_locked(idx[k], *pod);
    if (f.ok()) {
      passed.push_back(k);
    } else {
      ++counts[static_cast<size_t>(f.dimension)];
      (f.unresolvable ? unresolvable : failed)[names[k]] = std::move(f.message);
    }
  }
  PodEntry& e = pods_[pi];
  if (!e.bound) {
    if (!passed.empty()) {
      e.pending_reason = "schedulable";
    } else {
      size_t best = 1;
      for (size_t d = 1; d < counts.size(); ++d)
        if (counts[d] > counts[best]) best = d;
      e.pending_reason = counts[best] > 0 ? dimension_label(static_cast<Dimension>(best)) : "no_nodes";
    }
  }
  // The reply in the request's form, survivors in request order (what
  // make_filter_result() does, without its name set: this is the hot path).
  ExtenderFilterResult out;
  if (args.node_texts) {
    std::vector<std::string_view> items;
    items.reserve(passed.size());
    for (size_t k : passed) items.push_back((*args.node_texts)[positions[k]].json);
    out.node_texts = std::move(items);
    out.source = args.source;
  } else if (args.nodes) {
    std::unordered_map<std::string_view, const nlohmann::json*> objects;
    objects.reserve(args.nodes->size());
    for (const nlohmann::json& obj : *args.nodes)
      objects.emplace(obj["metadata"]["name"].get_ref<const std::string&>(), &obj);
    std::vector<nlohmann::json> items;
    items.reserve(passed.size());
    for (size_t k : passed) items.push_back(*objects.at(names[k]));
    out.nodes = std::move(items);
  } else {
    std::vector<std::string> survivors;
    survivors.reserve(passed.size());
    for (size_t k : passed) survivors.push_back(names[k]);
    out.node_names = std::move(survivors);
  }
  out.failed_nodes = std::move(failed);
  out.failed_and_unresolvable_nodes = std::move(unresolvable);
  return out;
}

HostPriorityList ExtenderService::prioritize(const ExtenderArgs& args, std::string* error) {
  std::lock_guard lock(mu_);
  std::optional<K8sPod> pod = parse_args_pod(args.pod, error);
  if (!pod) return {};
  pod_index_locked(*pod, args.pod);
  std::vector<std::string> names;
  std::map<std::string, std::string> unresolvable;
  std::vector<int> idx = resolve_candidates_locked(args, names, unresolvable);
  HostPriorityList out;
  out.reserve(names.size() + unresolvable.size());
  std::vector<int64_t> raw(idx.size(), 0);
  std::vector<bool> feasible(idx.size(), false);
  int64_t lo = 0, hi = 0;
  bool any = false;
  policy_->prepare(*state_, pod->request);
  for (size_t k = 0; k < idx.size(); ++k) {
    if (!check_node_locked(idx[k], *pod).ok()) continue;
    const Request req = request_on(*pod, nodes_[idx[k]]);
    raw[k] = policy_->score(*state_, NodeId{idx[k]}, req).score;
    feasible[k] = true;
    if (!any || raw[k] < lo) lo = raw[k];
    if (!any || raw[k] > hi) hi = raw[k];
    any = true;
  }
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t score = 0;
    if (feasible[k]) {
      const int64_t s100 = hi == lo ? 100 : (raw[k] - lo) * 100 / (hi - lo);
      score = (s100 * kMaxExtenderPriority + 50) / 100;
    }
    out.push_back({names[k], score});
  }
  for (const auto& [name, why] : unresolvable) out.push_back({name, 0});
  return clamp_scores(std::move(out));
}

uint32_t ExtenderService::choose_gpus_locked(int n, const K8sPod& pod, const Request& req) {
  if (!req.is_gpu()) return 0;
  const NodeId id{n};
  policy_->prepare(*state_, pod.request);
  uint32_t mask = policy_->score(*state_, id, req).gpu_mask;
  const K8sNode& node = nodes_[n];
  auto free = state_->gpu_free_milli(id);
  std::vector<int32_t> eligible(free.begin(), free.end());
  if (node.gpu_memory_mib > 0) {
    const int64_t mem = pod_gpu_memory_mib(pod, req, node.gpu_memory_mib);
    for (size_t g = 0; g < eligible.size(); ++g)
      if (node.gpu_memory_mib - gpu_mem_used_[n][g] < mem) eligible[g] = -1;
  }
  bool mask_ok = std::popcount(mask) == req.gpu_count;
  for (size_t g = 0; g < eligible.size() && mask_ok; ++g)
    if ((mask >> g & 1u) && eligible[g] < req.gpu_milli) mask_ok = false;
  if (req.gpu_scope != GpuScope::kAny) {
    // Keep the policy's GPUs when they already share a group; else best fit
    // inside the smallest group that holds the pod. A preferred scope with
    // no such group falls back to the plain choice below.
    if (mask_ok && aligned_set(*state_, id, req.gpu_scope, mask, req.gpu_count) == mask) return mask;
    uint32_t fit = 0;
    for (size_t g = 0; g < eligible.size(); ++g)
      if (eligible[g] >= req.gpu_milli) fit |= 1u << g;
    if (const uint32_t set = aligned_set(*state_, id, req.gpu_scope, fit, req.gpu_count); set != 0) {
      std::vector<int32_t> in_set = eligible;
      for (size_t g = 0; g < in_set.size(); ++g)
        if (!(set >> g & 1u)) in_set[g] = -1;
      return choose_gpus_best_fit(in_set, req);
    }
  }
  return mask_ok ? mask : choose_gpus_best_fit(eligible, req);
}

ExtenderBindingResult ExtenderService::bind(const ExtenderBindingArgs& args) {
  std::lock_guard lock(mu_);
  ExtenderBindingResult r;
  const std::string key = (args.pod_namespace.empty() ? std::string("default") : args.pod_namespace) + "/" +
                          args.pod_name;
  auto it = pod_index_.find(key);
  if (it == pod_index_.end()) {
    r.error = fmt::format("pod {} is unknown to gpupack (no filter call or cluster list has shown it)", key);
    return r;
  }
  PodEntry& e = pods_[it->second];
  if (!args.pod_uid.empty() && !e.pod.uid.empty() && args.pod_uid != e.pod.uid) {
    r.error = fmt::format("pod {} has UID {}, bind asked for UID {}", key, e.pod.uid, args.pod_uid);
    return r;
  }
  const int n = node_index_locked(args.node);
  if (n < 0) {
    r.error = fmt::format("node {} is unknown to gpupack", args.node);
    return r;
  }
  if (e.bound) {
    if (index(e.assignment.node) == static_cast<size_t>(n)) return r;  // retry: already done
    r.error = fmt::format("pod {} is already bound to node {}", key, nodes_[index(e.assignment.node)].spec.name);
    return r;
  }
  Fit f = check_node_locked(n, e.pod);
  if (!f.ok()) {
    r.error = fmt::format("pod {} does not fit node {}: {}", key, args.node, f.message);
    return r;
  }
  const Request req = request_on(e.pod, nodes_[n]);
  Assignment where{NodeId{n}, choose_gpus_locked(n, e.pod, req), req.is_gpu() ? req.gpu_milli : 0};
  const PodId pid{it->second};
  Status s = state_->bind(pid, req, where);
  if (!s.is_ok()) {
    r.error = fmt::format("pod {} on node {}: {}", key, args.node, s.message);
    return r;
  }
  state_->commit();
  e.bound = true;
  e.request = req;
  e.assignment = where;
  charge_locked(e, +1);
  const std::string annotation = req.is_gpu() ? assigned_gpus_annotation(args.node, where) : "";
  if (binder_) {
    std::string err = binder_->bind(e.pod, args.node, annotation);
    if (!err.empty()) {
      charge_locked(e, -1);
      state_->unbind(pid);
      state_->commit();
      e.bound = false;
      r.error = err;
      return r;
    }
  }
  ++mutations_;
  e.bound_here_at = std::chrono::steady_clock::now();
  e.pod.node_name = args.node;
  e.pending_reason.clear();
  if (e.object.is_object()) {
    e.object["spec"]["nodeName"] = args.node;
    if (!annotation.empty()) e.object["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = annotation;
  }
  if (!annotation.empty()) {
    e.pod.annotations[std::string(annotations::kAssignedGpus)] = annotation;
    e.pod.assigned = parse_assigned_gpus(annotation);
  }
  return r;
}

ExtenderPreemptionResult ExtenderService::preempt(const ExtenderPreemptionArgs& args, std::string* error) {
  std::lock_guard lock(mu_);
  ExtenderPreemptionResult out;
  std::optional<K8sPod> pod = parse_args_pod(args.pod, error);
  if (!pod) return out;
  pod_index_locked(*pod, args.pod);
  std::map<std::string, MetaVictims> proposed;
  if (args.node_name_to_meta_victims) proposed = *args.node_name_to_meta_victims;
  if (args.node_name_to_victims) {
    for (const auto& [node, v] : *args.node_name_to_victims) {
      MetaVictims m;
      m.num_pdb_violations = v.num_pdb_violations;
      for (const nlohmann::json& p : v.pods) {
        const nlohmann::json* meta = p.contains("metadata") ? &p["metadata"] : nullptr;
        if (meta && meta->contains("uid") && (*meta)["uid"].is_string())
          m.pod_uids.push_back((*meta)["uid"].get<std::string>());
      }
      proposed[node] = std::move(m);
    }
  }
  std::unordered_map<std::string, int> by_uid;
  for (size_t i = 0; i < pods_.size(); ++i)
    if (pods_[i].bound && !pods_[i].pod.uid.empty()) by_uid[pods_[i].pod.uid] = static_cast<int>(i);
  for (auto& [node, victims] : proposed) {
    const int n = node_index_locked(node);
    if (n < 0) continue;
    const ClusterState::Checkpoint mark = state_->checkpoint();
    std::vector<int64_t> mem = gpu_mem_used_[n];
    std::map<std::string, int64_t> mig = mig_used_[n];
    for (const std::string& uid : victims.pod_uids) {
      auto it = by_uid.find(uid);
      if (it == by_uid.end()) continue;
      PodEntry& v = pods_[it->second];
      if (static_cast<int>(index(v.assignment.node)) != n) continue;
      state_->unbind(PodId{it->second});
      const int64_t m = pod_gpu_memory_mib(v.pod, v.request, nodes_[n].gpu_memory_mib);
      for (size_t g = 0; g < mem.size(); ++g)
        if (v.assignment.gpu_mask >> g & 1u) mem[g] -= m;
      for (const auto& [profile, count] : v.pod.mig_devices) mig[profile] -= count;
    }
    const bool fits_after = check_node_locked(n, *pod, &mem, &mig).ok();
    state_->rollback(mark);
    if (fits_after) out.node_name_to_meta_victims[node] = victims;
  }
  state_->commit();
  return out;
}

std::map<std::string, std::string> ExtenderService::assignments() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (const PodEntry& e : pods_)
    if (e.bound && e.request.is_gpu())
      out[e.pod.key()] = assigned_gpus_annotation(nodes_[index(e.assignment.node)].spec.name, e.assignment);
  return out;
}

std::vector<K8sPod> ExtenderService::pods() const {
  std::lock_guard lock(mu_);
  std::vector<K8sPod> out;
  out.reserve(pods_.size());
  for (const PodEntry& e : pods_) out.push_back(e.pod);
  return out;
}

nlohmann::json ExtenderService::pod_list_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json items = nlohmann::json::array();
  for (const PodEntry& e : pods_)
    if (e.object.is_object()) items.push_back(e.object);
  return nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

uint64_t ExtenderService::mutation_count() const {
  std::lock_guard lock(mu_);
  return mutations_;
}

ServiceMetrics ExtenderService::metrics() const {
  std::lock_guard lock(mu_);
  ServiceMetrics m;
  const GpuCatalog& cat = GpuCatalog::builtin();
  const auto now = std::chrono::steady_clock::now();
  m.node_count = static_cast<int>(nodes_.size());
  m.bound_pods = 0;
  for (const PodEntry& e : pods_) m.bound_pods += e.bound;

  // Pending pods and their reasons.
  std::vector<const PodEntry*> pending;
  for (const PodEntry& e : pods_)
    if (!e.bound && e.pod.node_name.empty() && !e.pod.terminal() && (e.pod.request.is_gpu() || e.pod.is_mig()))
      pending.push_back(&e);
  constexpr size_t kMaxExplained = 1000;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PodEntry& e = *pending[i];
    std::string reason = e.pending_reason;
    if (reason.empty() && i < kMaxExplained) {
      std::array<int, kDimensionCount> counts{};
      bool fits_somewhere = false;
      for (int n = 0; n < static_cast<int>(nodes_.size()) && !fits_somewhere; ++n) {
        Fit f = check_node_locked(n, e.pod);
        if (f.ok()) fits_somewhere = true;
        else ++counts[static_cast<size_t>(f.dimension)];
      }
      size_t best = 1;
      for (size_t d = 1; d < counts.size(); ++d)
        if (counts[d] > counts[best]) best = d;
      reason = fits_somewhere ? "schedulable"
                              : (counts[best] > 0 ? dimension_label(static_cast<Dimension>(best)) : "no_nodes");
      e.pending_reason = reason;
    }
    if (reason.empty()) reason = "unknown";
    m.pending.push_back({e.pod.namespace_name, e.pod.name, reason,
                         std::chrono::duration<double>(now - e.first_seen).count()});
  }

  // Requests that free GPU capacity should serve: the pending pods, else the
  // typical (target) workload.
  struct Probe {
    const K8sPod* pod = nullptr;  // null = a target class
    Request req;
    int64_t mem_mib = 0;
  };
  std::vector<Probe> probes;
  std::set<std::tuple<int64_t, int64_t, int32_t, int32_t, ModelMask, int64_t, bool>> seen;
  for (const PodEntry* e : pending) {
    if (!e->pod.request.is_gpu()) continue;
    const Request& r = e->pod.request;
    if (seen.insert({r.cpu_milli, r.memory_mib, r.gpu_count, r.gpu_milli, r.allowed_models, e->pod.gpu_memory_mib,
                     e->pod.shared_replicas > 0})
            .second)
      probes.push_back({&e->pod, r, e->pod.gpu_memory_mib});
  }
  if (probes.empty()) {
    for (const TargetClass& c : target_->classes)
      if (c.gpu_count > 0)
        probes.push_back({nullptr, Request{c.cpu_milli, 0, c.gpu_count, c.gpu_milli, c.allowed_models}, 0});
  }

  std::map<GpuModelId, ServiceMetrics::Pool> pools;
  for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) {
    const K8sNode& node = nodes_[n];
    const NodeId id{n};
    const int gpus = node.spec.gpu_count;
    if (gpus == 0 && node.mig_devices.empty()) continue;
    const std::string model = gpus > 0 ? cat.spec(node.spec.gpu_model).name : "";
    ServiceMetrics::Node nm{node.spec.name, model, 0, int64_t{gpus} * kGpuMilliPerGpu, {}};
    for (const auto& [profile, alloc] : node.mig_devices) {
      auto u = mig_used_[n].find(profile);
      nm.mig[profile] = {u == mig_used_[n].end() ? 0 : u->second, alloc};
    }
    auto free = state_->gpu_free_milli(id);
    ServiceMetrics::Pool* pool = nullptr;
    if (gpus > 0) {
      pool = &pools[node.spec.gpu_model];
      pool->model = model;
      pool->capacity_milli += nm.capacity_milli;
      pool->free_milli += state_->gpu_free_total_milli(id);
      const double frag = node_fragmentation_milli(*target_, *state_, id);
      pool->fragmentation_milli += frag;
      m.cluster_fragmentation_milli += frag;
      m.cluster_free_milli += state_->gpu_free_total_milli(id);
    }
    for (int g = 0; g < gpus; ++g) {
      ServiceMetrics::Gpu gm;
      gm.node = node.spec.name;
      gm.gpu = g;
      gm.model = model;
      gm.allocated_milli = kGpuMilliPerGpu - free[g];
      gm.allocated_memory_mib = gpu_mem_used_[n][g];
      gm.memory_mib = node.gpu_memory_mib;
      nm.allocated_milli += gm.allocated_milli;
      if (free[g] > 0) {
        bool usable = false;
        for (const Probe& p : probes) {
          const Request req = p.pod ? request_on(*p.pod, node) : p.req;
          if (!model_allowed(req.allowed_models, node.spec.gpu_model) || free[g] < req.gpu_milli) continue;
          if (state_->cpu_free_milli(id) < req.cpu_milli || state_->memory_free_mib(id) < req.memory_mib) continue;
          if (count_gpus_with_free(free, req.gpu_milli) < req.gpu_count) continue;
          if (node.gpu_memory_mib > 0 && p.mem_mib > 0 && node.gpu_memory_mib - gpu_mem_used_[n][g] < p.mem_mib)
            continue;
          usable = true;
          break;
        }
        gm.stranded = !usable;
        if (gm.stranded) {
          ++pool->stranded_gpus;
          if (node.gpu_memory_mib > 0) gm.stranded_memory_mib = std::max<int64_t>(0, node.gpu_memory_mib - gpu_mem_used_[n][g]);
        }
      }
      m.gpus.push_back(std::move(gm));
    }
    m.nodes.push_back(std::move(nm));
  }
  for (auto& [id, p] : pools) m.pools.push_back(std::move(p));
  return m;
}

}  // namespace gpupack
