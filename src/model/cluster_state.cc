#include "model/cluster_state.h"

#include <fmt/format.h>

#include <atomic>
#include <stdexcept>
#include <unordered_set>

namespace gpupack {

namespace {
std::atomic<uint64_t> g_version_stamp{0};
uint64_t next_stamp() { return g_version_stamp.fetch_add(1, std::memory_order_relaxed) + 1; }
}  // namespace

int shape_tag(const Request& r) {
  if (!r.is_gpu()) return -1;
  if (r.is_shared()) return 0;
  return std::min(r.gpu_count, kMaxShapeTag);
}

ClusterState::ClusterState(std::vector<NodeSpec> nodes) : specs_(std::move(nodes)) {
  std::unordered_set<std::string_view> seen;
  const size_t n = specs_.size();
  names_.reserve(n);
  for (const NodeSpec& s : specs_) {
    if (s.cpu_milli < 0 || s.memory_mib < 0 || s.gpu_count < 0)
      throw std::invalid_argument(fmt::format("node '{}': negative capacity", s.name));
    if (s.gpu_count > kMaxGpusPerNode)
      throw std::invalid_argument(fmt::format("node '{}': {} GPUs, at most {} supported", s.name,
                                              s.gpu_count, kMaxGpusPerNode));
    if (s.gpu_count > 0 && s.gpu_model >= GpuCatalog::builtin().size())
      throw std::invalid_argument(fmt::format("node '{}': unknown GPU model id", s.name));
    names_.push_back(s.name);
  }
  for (const auto& name : names_) {
    if (!seen.insert(name).second)
      throw std::invalid_argument(fmt::format("node '{}' appears twice", name));
  }
  cpu_total_.resize(n);
  cpu_free_.resize(n);
  mem_total_.resize(n);
  mem_free_.resize(n);
  gpu_count_.resize(n);
  gpu_model_.resize(n);
  gpu_begin_.resize(n);
  gpu_free_total_.resize(n);
  shapes_.assign(n, ShapeCounts{});
  version_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeSpec& s = specs_[i];
    version_[i] = next_stamp();
    cpu_total_[i] = cpu_free_[i] = s.cpu_milli;
    mem_total_[i] = mem_free_[i] = s.memory_mib;
    gpu_count_[i] = s.gpu_count;
    gpu_model_[i] = s.gpu_model;
    gpu_begin_[i] = static_cast<int32_t>(gpu_free_.size());
    gpu_free_.insert(gpu_free_.end(), s.gpu_count, kGpuMilliPerGpu);
    gpu_free_total_[i] = int64_t{s.gpu_count} * kGpuMilliPerGpu;
    gpu_capacity_milli_ += gpu_free_total_[i];
  }
}

std::vector<PodId> ClusterState::bound_pods() const {
  std::vector<PodId> out;
  out.reserve(bound_pods_);
  for (size_t i = 0; i < pods_.size(); ++i)
    if (pods_[i].bound) out.push_back(PodId{static_cast<int32_t>(i)});
  return out;
}

Status ClusterState::check_fit(const Request& req, const Assignment& where) const {
  if (auto err = req.validate(); !err.empty()) return Status::error(err);
  if (!valid(where.node) || index(where.node) >= names_.size())
    return Status::error(fmt::format("node id {} does not exist", static_cast<int>(where.node)));
  const size_t n = index(where.node);
  if (where.gpu_count() != req.gpu_count || (req.gpu_count > 0 && where.gpu_milli != req.gpu_milli))
    return Status::error(fmt::format("assignment of {} GPUs x {} milli does not match request of {} x {}",
                                     where.gpu_count(), where.gpu_milli, req.gpu_count, req.gpu_milli));
  if (cpu_free_[n] < req.cpu_milli)
    return Status::unschedulable(Dimension::kCpu, fmt::format("node {}: cpu free {} < {} milli",
                                                              names_[n], cpu_free_[n], req.cpu_milli));
  if (mem_free_[n] < req.memory_mib)
    return Status::unschedulable(Dimension::kMemory, fmt::format("node {}: memory free {} < {} MiB",
                                                                 names_[n], mem_free_[n], req.memory_mib));
  if (req.gpu_count == 0) return Status::ok();
  if (!model_allowed(req.allowed_models, gpu_model_[n]))
    return Status::unresolvable(Dimension::kModel, fmt::format("node {}: GPU model {} not allowed", names_[n],
                                                               GpuCatalog::builtin().spec(gpu_model_[n]).name));
  if (gpu_count_[n] < 32 && (where.gpu_mask >> gpu_count_[n]) != 0)
    return Status::error(fmt::format("node {}: GPU index beyond its {} GPUs", names_[n], gpu_count_[n]));
  for (int g = 0; g < gpu_count_[n]; ++g) {
    if (!(where.gpu_mask & (1u << g))) continue;
    if (gpu_free_[gpu_begin_[n] + g] < req.gpu_milli)
      return Status::unschedulable(Dimension::kGpuMilli,
                                   fmt::format("node {}: GPU {} free {} < {} milli", names_[n], g,
                                               gpu_free_[gpu_begin_[n] + g], req.gpu_milli));
  }
  return Status::ok();
}

void ClusterState::apply(PodId pod, const Request& req, const Assignment& where, int sign) {
  const size_t n = index(where.node);
  cpu_free_[n] -= sign * req.cpu_milli;
  mem_free_[n] -= sign * req.memory_mib;
  for (int g = 0; g < gpu_count_[n]; ++g) {
    if (where.gpu_mask & (1u << g)) gpu_free_[gpu_begin_[n] + g] -= sign * where.gpu_milli;
  }
  const int64_t gpu_delta = int64_t{where.gpu_count()} * where.gpu_milli;
  gpu_free_total_[n] -= sign * gpu_delta;
  gpu_used_milli_ += sign * gpu_delta;
  if (int tag = shape_tag(req); tag >= 0) shapes_[n][tag] += sign;
  version_[n] = next_stamp();
  if (index(pod) >= pods_.size()) pods_.resize(index(pod) + 1);
  PodRecord& rec = pods_[index(pod)];
  if (sign > 0) {
    rec = PodRecord{req, where, true};
    ++bound_pods_;
  } else {
    rec.bound = false;
    --bound_pods_;
  }
}

Status ClusterState::bind(PodId pod, const Request& req, const Assignment& where) {
  if (static_cast<int32_t>(pod) < 0) return Status::error("negative pod id");
  if (is_bound(pod))
    return Status::error(fmt::format("pod {} is already bound to node {}", static_cast<int>(pod),
                                     names_[index(assignment(pod).node)]));
  Status st = check_fit(req, where);
  if (!st.is_ok()) return st;
  apply(pod, req, where, +1);
  log_.push_back({true, pod, req, where});
  return Status::ok();
}

Status ClusterState::unbind(PodId pod) {
  if (!is_bound(pod)) return Status::error(fmt::format("pod {} is not bound", static_cast<int>(pod)));
  const PodRecord rec = pods_[index(pod)];
  apply(pod, rec.request, rec.assignment, -1);
  log_.push_back({false, pod, rec.request, rec.assignment});
  return Status::ok();
}

void ClusterState::rollback(Checkpoint mark) {
  while (log_.size() > mark) {
    const LogEntry e = log_.back();
    log_.pop_back();
    apply(e.pod, e.request, e.assignment, e.was_bind ? -1 : +1);
  }
}

std::vector<std::string> ClusterState::check_invariants() const {
  std::vector<std::string> errors;
  const size_t n = names_.size();
  std::vector<int64_t> cpu_used(n, 0), mem_used(n, 0), gpu_total(n, 0);
  std::vector<int64_t> gpu_used(gpu_free_.size(), 0);
  std::vector<ShapeCounts> shapes(n, ShapeCounts{});
  int bound = 0;
  int64_t used_total = 0;
  for (size_t p = 0; p < pods_.size(); ++p) {
    const PodRecord& r = pods_[p];
    if (!r.bound) continue;
    ++bound;
    const size_t node = index(r.assignment.node);
    if (node >= n) {
      errors.push_back(fmt::format("pod {} bound to missing node", p));
      continue;
    }
    cpu_used[node] += r.request.cpu_milli;
    mem_used[node] += r.request.memory_mib;
    for (int g = 0; g < gpu_count_[node]; ++g)
      if (r.assignment.gpu_mask & (1u << g)) gpu_used[gpu_begin_[node] + g] += r.assignment.gpu_milli;
    used_total += int64_t{r.assignment.gpu_count()} * r.assignment.gpu_milli;
    if (int tag = shape_tag(r.request); tag >= 0) ++shapes[node][tag];
  }
  if (bound != bound_pods_) errors.push_back(fmt::format("bound pod count {} != {}", bound_pods_, bound));
  if (used_total != gpu_used_milli_)
    errors.push_back(fmt::format("cluster gpu used {} != sum over pods {}", gpu_used_milli_, used_total));
  for (size_t i = 0; i < n; ++i) {
    if (cpu_free_[i] < 0) errors.push_back(fmt::format("node {}: cpu free {} < 0", names_[i], cpu_free_[i]));
    if (mem_free_[i] < 0) errors.push_back(fmt::format("node {}: memory free {} < 0", names_[i], mem_free_[i]));
    if (cpu_free_[i] != cpu_total_[i] - cpu_used[i])
      errors.push_back(fmt::format("node {}: cpu free {} != total - used {}", names_[i], cpu_free_[i],
                                   cpu_total_[i] - cpu_used[i]));
    if (mem_free_[i] != mem_total_[i] - mem_used[i])
      errors.push_back(fmt::format("node {}: memory free {} != total - used {}", names_[i], mem_free_[i],
                                   mem_total_[i] - mem_used[i]));
    int64_t free_total = 0;
    for (int g = 0; g < gpu_count_[i]; ++g) {
      const int32_t f = gpu_free_[gpu_begin_[i] + g];
      if (f < 0 || f > kGpuMilliPerGpu)
        errors.push_back(fmt::format("node {}: GPU {} free {} outside 0..1000", names_[i], g, f));
      if (f != kGpuMilliPerGpu - gpu_used[gpu_begin_[i] + g])
        errors.push_back(fmt::format("node {}: GPU {} free {} != 1000 - used {}", names_[i], g, f,
                                     gpu_used[gpu_begin_[i] + g]));
      free_total += f;
    }
    if (free_total != gpu_free_total_[i])
      errors.push_back(fmt::format("node {}: gpu free total {} != sum {}", names_[i], gpu_free_total_[i], free_total));
    if (shapes[i] != shapes_[i]) errors.push_back(fmt::format("node {}: pod shape counts differ", names_[i]));
  }
  return errors;
}

}  // namespace gpupack
