#include "sched/filter.h"

#include <fmt/format.h>

namespace gpupack {

namespace {

// GPUs of the node whose memory (when known) could ever hold `mib`.
int gpus_with_memory(const ClusterState& s, NodeId n, int64_t mib) {
  int k = 0;
  for (int g = 0; g < s.gpu_count(n); ++g)
    k += s.gpu_memory_total_mib(n, g) == 0 || s.gpu_memory_total_mib(n, g) >= mib;
  return k;
}

}  // namespace

Dimension failed_dimension(const ClusterState& s, NodeId n, const Request& r, bool* unresolvable) {
  bool never = true;
  Dimension d = Dimension::kNone;
  if (r.gpu_count > 0 && (s.gpu_count(n) < r.gpu_count)) {
    d = Dimension::kGpuMilli;
  } else if (r.gpu_count > 0 && !model_allowed(r.allowed_models, s.gpu_model(n))) {
    d = Dimension::kModel;
  } else if (s.cpu_total_milli(n) < r.cpu_milli) {
    d = Dimension::kCpu;
  } else if (s.memory_total_mib(n) < r.memory_mib) {
    d = Dimension::kMemory;
  } else if (!r.mig_devices.empty() && s.check_mig_devices(n, r).code == Status::Code::kUnschedulableAndUnresolvable) {
    d = Dimension::kMigSlot;
  } else if (r.gpu_count > 0 && r.gpu_memory_mib > 0 && gpus_with_memory(s, n, r.gpu_memory_mib) < r.gpu_count) {
    d = Dimension::kGpuMemory;
  } else if (r.gpu_count > 0 && r.scope_required && r.gpu_scope != GpuScope::kAny &&
             largest_gpu_group(s, n, r.gpu_scope) < r.gpu_count) {
    d = Dimension::kTopology;
  } else if (!r.is_plain() || s.has_hardware_setup(n)) {
    never = false;
    d = choose_placement(s, n, r).failed;
  } else {
    never = false;
    if (s.cpu_free_milli(n) < r.cpu_milli) {
      d = Dimension::kCpu;
    } else if (s.memory_free_mib(n) < r.memory_mib) {
      d = Dimension::kMemory;
    } else if (r.gpu_count > 0 && count_gpus_with_free(s.gpu_free_milli(n), r.gpu_milli) < r.gpu_count) {
      d = Dimension::kGpuMilli;
    }
  }
  if (unresolvable) *unresolvable = never && d != Dimension::kNone;
  return d;
}

Status explain_fit(const ClusterState& s, NodeId n, const Request& r) {
  bool never = false;
  const Dimension d = failed_dimension(s, n, r, &never);
  if (d == Dimension::kNone) return Status::ok();
  std::string msg;
  if (never && d == Dimension::kMigSlot) return s.check_mig_devices(n, r);
  if (never && d == Dimension::kGpuMemory)
    return Status::unresolvable(d,
                                fmt::format("node {}: {} GPUs hold {} MiB, {} needed", s.node_name(n),
                                            gpus_with_memory(s, n, r.gpu_memory_mib), r.gpu_memory_mib, r.gpu_count));
  if (never && d == Dimension::kTopology)
    return Status::unresolvable(
        d, fmt::format("node {}: its largest {} group has {} GPUs, {} requested in one", s.node_name(n),
                       to_string(r.gpu_scope), largest_gpu_group(s, n, r.gpu_scope), r.gpu_count));
  if (!never && (!r.is_plain() || s.has_hardware_setup(n))) {
    const Placement p = choose_placement(s, n, r, {}, &msg);
    return Status::unschedulable(p.failed, msg);
  }
  switch (d) {
    case Dimension::kModel:
      msg = fmt::format("node {}: GPU model {} not allowed", s.node_name(n),
                        GpuCatalog::builtin().spec(s.gpu_model(n)).name);
      break;
    case Dimension::kCpu:
      msg = never
                ? fmt::format("node {}: cpu capacity {} < {} milli", s.node_name(n), s.cpu_total_milli(n), r.cpu_milli)
                : fmt::format("node {}: cpu free {} < {} milli", s.node_name(n), s.cpu_free_milli(n), r.cpu_milli);
      break;
    case Dimension::kMemory:
      msg = never ? fmt::format("node {}: memory capacity {} < {} MiB", s.node_name(n), s.memory_total_mib(n),
                                r.memory_mib)
                  : fmt::format("node {}: memory free {} < {} MiB", s.node_name(n), s.memory_free_mib(n), r.memory_mib);
      break;
    default:
      msg = never ? fmt::format("node {} has {} GPUs, {} requested", s.node_name(n), s.gpu_count(n), r.gpu_count)
                  : fmt::format("node {}: {} GPUs with >= {} milli free, {} needed", s.node_name(n),
                                count_gpus_with_free(s.gpu_free_milli(n), r.gpu_milli), r.gpu_milli, r.gpu_count);
  }
  return never ? Status::unresolvable(d, msg) : Status::unschedulable(d, msg);
}

}  // namespace gpupack
