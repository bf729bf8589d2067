#include "frag/cluster_metrics.h"

#include <algorithm>
#include <cmath>

#include "frag/packing_prices.h"

namespace gpupack {

namespace {

const std::string& no_model() {
  static const std::string none;
  return none;
}

// Could `req` use GPU g of node n now (with enough other GPUs for its count)?
bool probe_uses(const ClusterState& s, NodeId n, int g, const Request& req) {
  if (!req.is_gpu() || !model_allowed(req.allowed_models, s.gpu_model(n))) return false;
  if (s.cpu_free_milli(n) < req.cpu_milli || s.memory_free_mib(n) < req.memory_mib) return false;
  if (s.gpu_count(n) < req.gpu_count || s.gpu_fit(n, g, req) != Dimension::kNone) return false;
  int fit = 0;
  for (int k = 0; k < s.gpu_count(n) && fit < req.gpu_count; ++k) fit += s.gpu_fit(n, k, req) == Dimension::kNone;
  return fit >= req.gpu_count;
}

}  // namespace

ClusterMetrics cluster_metrics(const ClusterState& s, const TargetWorkload& target, std::span<const Request> probes,
                               bool per_node) {
  ClusterMetrics m;
  const GpuCatalog& cat = GpuCatalog::builtin();
  m.node_count = s.node_count();
  m.bound_pods = s.bound_pod_count();
  std::map<GpuModelId, ClusterMetrics::Pool> pools;
  bool charged_below_milli = false;  // a GPU that charges a pod less than its milli (repack bound)
  for (int i = 0; i < s.node_count(); ++i) {
    const NodeId n{i};
    const NodeSpec& spec = s.spec(n);
    const int gpus = s.gpu_count(n);
    if (gpus == 0 && spec.mig_devices.empty()) continue;
    ++m.gpu_nodes;
    m.gpu_total += gpus;
    const std::string& model = gpus > 0 ? cat.spec(s.gpu_model(n)).name : no_model();
    ClusterMetrics::Node nm{per_node ? std::string(s.node_name(n)) : std::string(),
                            per_node ? model : no_model(),
                            0,
                            int64_t{gpus} * kGpuMilliPerGpu,
                            {}};
    for (const MigDeviceCount& d : spec.mig_devices)
      nm.mig[d.profile] = {d.count - s.mig_devices_free(n, d.profile), d.count};
    const auto free = s.gpu_free_milli(n);
    ClusterMetrics::Pool* pool = nullptr;
    if (gpus > 0) {
      pool = &pools[s.gpu_model(n)];
      pool->model = model;
      pool->capacity_milli += nm.capacity_milli;
      pool->free_milli += s.gpu_free_total_milli(n);
      const double frag = node_fragmentation_milli(target, s, n);
      nm.fragmentation_milli = frag;
      pool->fragmentation_milli += frag;
      m.cluster_fragmentation_milli += frag;
      m.cluster_free_milli += s.gpu_free_total_milli(n);
    }
    for (int g = 0; g < gpus; ++g) {
      ClusterMetrics::Gpu gm;
      gm.gpu = g;
      if (per_node) {
        gm.node = nm.name;
        gm.model = model;
      }
      gm.allocated_milli = kGpuMilliPerGpu - free[static_cast<size_t>(g)];
      gm.memory_mib = s.gpu_memory_total_mib(n, g);
      gm.allocated_memory_mib = gm.memory_mib > 0 ? gm.memory_mib - s.gpu_memory_free_mib(n, g) : 0;
      nm.allocated_milli += gm.allocated_milli;
      m.gpus_in_use += gm.allocated_milli > 0;
      const GpuMode mode = s.gpu_mode(n, g);
      charged_below_milli = charged_below_milli || mode == GpuMode::kTimeSlice || mode == GpuMode::kMig;
      if (free[static_cast<size_t>(g)] > 0) {
        gm.stranded =
            std::none_of(probes.begin(), probes.end(), [&](const Request& r) { return probe_uses(s, n, g, r); });
        if (gm.stranded) {
          ++pool->stranded_gpus;
          if (gm.memory_mib > 0) gm.stranded_memory_mib = std::max<int64_t>(0, s.gpu_memory_free_mib(n, g));
          pool->stranded_memory_mib += gm.stranded_memory_mib;
        }
      }
      if (per_node) m.gpus.push_back(std::move(gm));
    }
    if (per_node) m.nodes.push_back(std::move(nm));
  }
  for (auto& [id, p] : pools) m.pools.push_back(std::move(p));

  // The bound pods' GPU items, kept only when the GPUs are charged their
  // pods' milli: no GPU in time-slicing or MIG mode (shared and MPS GPUs
  // charge the milli, exclusive ones take whole GPUs only), no advertised MIG
  // devices in use, and the items add up to the GPUs' allocated milli.
  if (charged_below_milli) return m;
  std::vector<int64_t> count_by_milli(static_cast<size_t>(kGpuMilliPerGpu) + 1, 0);
  int64_t items_milli = 0;
  for (const PodId p : s.bound_pods()) {
    const Assignment& a = s.assignment(p);
    if (!s.request(p).mig_devices.empty() || a.gpu_milli < 0 || a.gpu_milli > kGpuMilliPerGpu) return m;
    if (a.gpu_mask == 0 || a.gpu_milli == 0) continue;
    count_by_milli[static_cast<size_t>(a.gpu_milli)] += a.gpu_count();
    items_milli += int64_t{a.gpu_count()} * a.gpu_milli;
  }
  if (items_milli == s.gpu_used_milli()) {
    auto& items = m.bound_gpu_items.emplace();
    for (int32_t milli = 1; milli <= kGpuMilliPerGpu; ++milli)
      if (count_by_milli[static_cast<size_t>(milli)] > 0)
        items.emplace_back(milli, static_cast<double>(count_by_milli[static_cast<size_t>(milli)]));
  }
  return m;
}

ClusterMetrics::Repack repack_of(const ClusterMetrics& m, double fluid_gpus) {
  double milli = 0;
  if (m.bound_gpu_items)
    for (const auto& [size, n] : *m.bound_gpu_items) milli += size * n;
  // The LP's optimum carries the simplex's rounding (about 1e-9 of a GPU).
  const auto gpus_1e6 = [](double gpus) { return std::max(0.0, std::round(gpus * 1e6) / 1e6); };
  return ClusterMetrics::Repack{gpus_1e6(fluid_gpus - milli / kGpuMilliPerGpu),
                                gpus_1e6(static_cast<double>(m.gpus_in_use) - fluid_gpus)};
}

std::optional<ClusterMetrics::Repack> repack_bound(const ClusterMetrics& m) {
  if (!m.bound_gpu_items) return std::nullopt;
  return repack_of(m, fluid_packing_gpus(*m.bound_gpu_items));
}

}  // namespace gpupack
