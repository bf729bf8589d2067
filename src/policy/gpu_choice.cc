#include "policy/gpu_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <tuple>
#include <vector>

#include "mig/mig_slot_choice.h"

namespace gpupack {
namespace {

// Picks req.gpu_count fitting GPUs, repeatedly taking the one that `better`
// prefers (strictly), so ties keep the lowest index.
template <typename Better>
uint32_t choose(std::span<const int32_t> free, const Request& req, Better better) {
  if (req.gpu_count <= 0) return 0;
  uint32_t mask = 0;
  for (int k = 0; k < req.gpu_count; ++k) {
    int pick = -1;
    for (int g = 0; g < static_cast<int>(free.size()); ++g) {
      if ((mask >> g) & 1u) continue;
      if (free[g] < req.gpu_milli) continue;
      if (pick < 0 || better(free[g], free[pick])) pick = g;
    }
    if (pick < 0) return 0;
    mask |= 1u << pick;
  }
  return mask;
}

}  // namespace

uint32_t choose_gpus_best_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t a, int32_t b) { return a < b; });
}

uint32_t choose_gpus_first_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t, int32_t) { return false; });
}

uint32_t choose_gpus_worst_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t a, int32_t b) { return a > b; });
}

}  // namespace gpupack

// ---------------------------------------------------------------------------
// Hardware-aware placement.

namespace gpupack {
namespace {

const MigTargetMix& mix_for(const MigGeometry& geo, const PlacementOptions& opt) {
  if (opt.mig_mix && geo.model < opt.mig_mix->size() && !(*opt.mig_mix)[geo.model].weight.empty())
    return (*opt.mig_mix)[geo.model];
  return default_mig_mix(geo);
}

// Blocked weight and capacity weight of a MIG GPU for a mix.
std::pair<double, double> mig_blocked_capacity(const MigGpuState& gpu, const MigTargetMix& mix) {
  double blocked = 0, capacity = 0;
  for (int q = 0; q < gpu.geometry().size(); ++q) {
    const double w = mix.weight[static_cast<size_t>(q)];
    if (w == 0) continue;
    const int cap = placeable_instances(gpu, q);
    if (cap == 0) blocked += w;
    capacity += w * cap;
  }
  return {blocked, capacity};
}

// Lexicographic cost of one single-GPU candidate (lower is better).
struct Cost {
  int fresh = 0;       // 1 = the GPU is idle now
  int charge = 0;      // milli the GPU is charged (less = less of a GPU used)
  double damage = 0;   // milli-scale damage (see header)
  double tie = 0;      // MIG: capacity weight lost; else leftover milli
  int free_units = 0;  // free milli of the GPU: prefer the fullest GPU
  int gpu = 0;
  int start = 0;
  auto key() const { return std::tie(fresh, charge, free_units, damage, tie, gpu, start); }
};

struct Candidate {
  Cost cost;
  int gpu = -1;
  int profile = -1;
  int start = -1;
};

// Counts failures per dimension to report the most common one.
struct FailureTally {
  std::array<int, kDimensionCount> counts{};
  std::string first_message;
  void add(Dimension d, std::string* msg) {
    ++counts[static_cast<size_t>(d)];
    if (msg && first_message.empty()) first_message = *msg;
  }
  Dimension worst() const {
    size_t best = 0;
    for (size_t k = 1; k < counts.size(); ++k)
      if (counts[k] > counts[best]) best = k;
    return counts[best] > 0 ? static_cast<Dimension>(best) : Dimension::kGpuMilli;
  }
};

bool gpu_idle(const ClusterState& s, NodeId n, int g) {
  if (const MigGpuState* m = s.mig_state(n, g))
    return s.mig_fixed_layout(n, g) ? s.mig_busy_starts(n, g) == 0 : m->empty();
  return s.gpu_free_milli(n)[static_cast<size_t>(g)] == kGpuMilliPerGpu && s.mps_clients(n, g) == 0;
}

// Best single-GPU candidate on GPU g (MIG or not), or none.
void consider_gpu(const ClusterState& s, NodeId n, int g, const Request& req, const PlacementOptions& opt,
                  Candidate& best, FailureTally& tally, std::string* why) {
  std::string msg;
  std::string* mp = why ? &msg : nullptr;
  const Dimension d = s.gpu_fit(n, g, req, -1, -1, mp);
  if (d != Dimension::kNone) {
    tally.add(d, mp);
    return;
  }
  const bool naive = opt.mig_rule == MigSlotRule::kFirstFree;
  const int fresh = gpu_idle(s, n, g) ? 1 : 0;
  auto offer = [&](const Cost& c, int profile, int start) {
    if (best.gpu < 0 || c.key() < best.cost.key()) best = {c, g, profile, start};
  };
  if (const MigGpuState* mig = s.mig_state(n, g)) {
    const MigGeometry& geo = mig->geometry();
    const int profile = *mig_profile_for(geo, req);
    if (s.mig_fixed_layout(n, g)) {
      for (const MigPlacement& p : mig->instances()) {
        if (p.profile != profile || ((s.mig_busy_starts(n, g) >> p.start) & 1u)) continue;
        Cost c;
        c.gpu = g;
        c.start = p.start;
        c.fresh = fresh;
        c.charge = kGpuMilliPerGpu * geo.profile(profile).memory_slices / geo.memory_slices;
        c.free_units = s.gpu_free_milli(n)[static_cast<size_t>(g)];
        offer(c, profile, p.start);
        if (naive) break;
      }
      return;
    }
    const uint8_t starts = mig->valid_starts(profile);
    const int32_t charge = kGpuMilliPerGpu * geo.profile(profile).memory_slices / geo.memory_slices;
    if (naive) {
      Cost c;
      c.fresh = fresh;
      c.charge = charge;
      c.gpu = g;  // first fit: no preference for the fullest GPU
      c.start = std::countr_zero(static_cast<unsigned>(starts));
      offer(c, profile, c.start);
      return;
    }
    const MigTargetMix& mix = mix_for(geo, opt);
    double total_w = 0;
    for (double w : mix.weight) total_w += w;
    const auto [blocked0, cap0] = mig_blocked_capacity(*mig, mix);
    for (int st = 0; st < kMaxMigMemorySlices; ++st) {
      if (!((starts >> st) & 1u)) continue;
      MigGpuState after = *mig;
      after.place(profile, st);
      const auto [blocked1, cap1] = mig_blocked_capacity(after, mix);
      Cost c;
      c.fresh = fresh;
      c.charge = charge;
      c.damage = total_w > 0 ? 1000.0 * (blocked1 - blocked0) / total_w : 0;
      c.tie = cap0 - cap1;
      c.free_units = s.gpu_free_milli(n)[static_cast<size_t>(g)];
      c.gpu = g;
      c.start = st;
      offer(c, profile, st);
    }
    return;
  }
  Cost c;
  c.gpu = g;
  {
    const int32_t free = s.gpu_free_milli(n)[static_cast<size_t>(g)];
    Assignment probe{n, 1u << g, req.gpu_milli};
    const int32_t charge = s.gpu_charge_milli(n, g, req, probe);
    const int32_t left = free - charge;
    c.fresh = fresh;
    c.charge = charge;
    // Another request of the same shape could not use what is left.
    bool reusable = left >= charge;
    if (s.gpu_mode(n, g) == GpuMode::kMps) reusable = reusable && s.mps_clients(n, g) + 1 < s.mps_replicas(n, g);
    if (s.gpu_mode(n, g) == GpuMode::kExclusive) reusable = false;
    c.damage = reusable ? 0 : left;
    c.tie = left;
    c.free_units = free;
  }
  offer(c, -1, -1);
}

int group_id(const ClusterState& s, NodeId n, int g, GpuScope scope) {
  switch (scope) {
    case GpuScope::kNvlink:
      return s.gpu_nvlink_domain(n, g);
    case GpuScope::kPcieSwitch:
      return s.gpu_pcie_switch(n, g);
    case GpuScope::kNuma:
      return s.gpu_numa(n, g);
    default:
      return -1;
  }
}

// Multi-GPU (or single non-MIG) whole set: picks `count` GPUs from `fit`
// (bit g = GPU g fits alone), grouped by scope as the request asks.
uint32_t choose_group(const ClusterState& s, NodeId n, const Request& req, uint32_t fit, bool* topology_failed) {
  const int count = req.gpu_count;
  const auto free = s.gpu_free_milli(n);
  // Best fit inside a set: GPUs with the least free milli, lowest index first.
  auto take = [&](uint32_t set) -> uint32_t {
    uint32_t mask = 0;
    for (int k = 0; k < count; ++k) {
      int pick = -1;
      for (int g = 0; g < static_cast<int>(free.size()); ++g) {
        if (!((set >> g) & 1u) || ((mask >> g) & 1u)) continue;
        if (pick < 0 || free[static_cast<size_t>(g)] < free[static_cast<size_t>(pick)]) pick = g;
      }
      if (pick < 0) return 0;
      mask |= 1u << pick;
    }
    return mask;
  };
  std::array<GpuScope, 3> order{GpuScope::kNvlink, GpuScope::kPcieSwitch, GpuScope::kNuma};
  int levels = 2;  // default preference: NVLink, then PCIe switch
  if (req.gpu_scope != GpuScope::kAny) {
    order = {req.gpu_scope, GpuScope::kNvlink, GpuScope::kPcieSwitch};
    levels = req.scope_required ? 1 : 3;
  }
  if (count > 1 || req.scope_required) {
    for (int l = 0; l < levels; ++l) {
      // Smallest group (by GPUs in it) with enough fitting GPUs.
      uint32_t best_set = 0;
      int best_size = 0;
      for (int g = 0; g < static_cast<int>(free.size()); ++g) {
        const int id = group_id(s, n, g, order[static_cast<size_t>(l)]);
        if (id < 0) continue;
        uint32_t members = 0, fitting = 0;
        for (int h = 0; h < static_cast<int>(free.size()); ++h) {
          if (group_id(s, n, h, order[static_cast<size_t>(l)]) != id) continue;
          members |= 1u << h;
          if ((fit >> h) & 1u) fitting |= 1u << h;
        }
        if (std::popcount(fitting) < count) continue;
        const int size = std::popcount(members);
        if (best_set == 0 || size < best_size) {
          best_set = fitting;
          best_size = size;
        }
      }
      if (best_set != 0) return take(best_set);
    }
    if (req.scope_required) {
      *topology_failed = true;
      return 0;
    }
  }
  return take(fit);
}

}  // namespace

const MigTargetMix& default_mig_mix(const MigGeometry& geo) {
  static const std::vector<MigTargetMix> mixes = [] {
    std::vector<MigTargetMix> v(GpuCatalog::builtin().size());
    for (const MigGeometry& g : all_mig_geometries()) v[g.model] = size_weighted_mix(g);
    return v;
  }();
  return mixes[geo.model];
}

MigTargetMix workload_mig_mix(const MigGeometry& geo, std::span<const Request> requests) {
  MigTargetMix mix;
  mix.weight.assign(static_cast<size_t>(geo.size()), 0.0);
  double total = 0;
  for (const Request& r : requests) {
    if (r.gpu_count != 1 || !(r.effective_modes() & mode_bit(GpuMode::kMig))) continue;
    if (auto p = mig_profile_for(geo, r)) {
      mix.weight[static_cast<size_t>(*p)] += 1;
      total += 1;
    }
  }
  if (total > 0)
    for (double& w : mix.weight) w /= total;
  return mix;
}

int largest_gpu_group(const ClusterState& s, NodeId n, GpuScope scope) {
  if (scope == GpuScope::kAny) return s.gpu_count(n);
  std::array<int, 64> size{};
  int best = 0;
  for (int g = 0; g < s.gpu_count(n); ++g) {
    const int id = group_id(s, n, g, scope);
    if (id >= 0 && id < static_cast<int>(size.size())) best = std::max(best, ++size[static_cast<size_t>(id)]);
  }
  return best;
}

Placement choose_placement(const ClusterState& s, NodeId n, const Request& req, const PlacementOptions& opt,
                           std::string* why) {
  Placement out;
  auto fail = [&](Dimension d, std::string msg) {
    out.failed = d;
    if (why) *why = std::move(msg);
    return out;
  };
  const std::string_view name = s.node_name(n);
  if (s.cpu_free_milli(n) < req.cpu_milli)
    return fail(Dimension::kCpu,
                fmt::format("node {}: cpu free {} < {} milli", name, s.cpu_free_milli(n), req.cpu_milli));
  if (s.memory_free_mib(n) < req.memory_mib)
    return fail(Dimension::kMemory,
                fmt::format("node {}: memory free {} < {} MiB", name, s.memory_free_mib(n), req.memory_mib));
  if (!req.mig_devices.empty()) {
    if (Status st = s.check_mig_devices(n, req); !st.is_ok()) return fail(st.dimension, st.message);
  }
  if (req.gpu_count > 0) {
    if (!model_allowed(req.allowed_models, s.gpu_model(n)))
      return fail(Dimension::kModel, fmt::format("node {}: GPU model {} not allowed", name,
                                                 GpuCatalog::builtin().spec(s.gpu_model(n)).name));
    if (s.gpu_count(n) < req.gpu_count)
      return fail(Dimension::kGpuMilli,
                  fmt::format("node {} has {} GPUs, {} requested", name, s.gpu_count(n), req.gpu_count));
  }
  FailureTally tally;
  bool topology_failed = false;
  const int numa_nodes = req.numa_aligned ? s.numa_count(n) : 1;
  bool numa_fit_any = !req.numa_aligned;
  for (int u = 0; u < numa_nodes; ++u) {
    const int numa = req.numa_aligned ? u : -1;
    if (req.numa_aligned) {
      if (s.numa_cpu_free_milli(n, u) < req.cpu_milli || s.numa_memory_free_mib(n, u) < req.memory_mib) continue;
      numa_fit_any = true;
    }
    Assignment a{n, 0, req.gpu_count > 0 ? req.gpu_milli : 0, -1, -1, static_cast<int8_t>(numa)};
    if (req.gpu_count == 0) {
      out.assignment = a;
      return out;
    }
    const int gpus = s.gpu_count(n);
    if (req.gpu_count == 1 && !req.scope_required) {
      Candidate best;
      for (int g = 0; g < gpus; ++g) {
        if (numa >= 0 && s.gpu_numa(n, g) != numa) continue;
        consider_gpu(s, n, g, req, opt, best, tally, why);
      }
      if (best.gpu < 0) continue;
      a.gpu_mask = 1u << best.gpu;
      a.mig_profile = static_cast<int8_t>(best.profile);
      a.mig_start = static_cast<int8_t>(best.start);
      out.assignment = a;
      return out;
    }
    uint32_t fit = 0;
    for (int g = 0; g < gpus; ++g) {
      if (numa >= 0 && s.gpu_numa(n, g) != numa) continue;
      if (s.mig_state(n, g)) {  // MIG instances serve single-GPU requests only
        tally.add(Dimension::kMigSlot, nullptr);
        continue;
      }
      std::string msg;
      const Dimension d = s.gpu_fit(n, g, req, -1, -1, why ? &msg : nullptr);
      if (d == Dimension::kNone)
        fit |= 1u << g;
      else
        tally.add(d, why ? &msg : nullptr);
    }
    if (std::popcount(fit) < req.gpu_count) continue;
    const uint32_t mask = choose_group(s, n, req, fit, &topology_failed);
    if (mask == 0) continue;
    a.gpu_mask = mask;
    out.assignment = a;
    return out;
  }
  if (!numa_fit_any)
    return fail(Dimension::kNuma, fmt::format("node {}: no NUMA node has {} cpu milli and {} MiB free", name,
                                              req.cpu_milli, req.memory_mib));
  if (topology_failed)
    return fail(Dimension::kTopology, fmt::format("node {}: no {} group holds {} fitting GPUs", name,
                                                  to_string(req.gpu_scope), req.gpu_count));
  const Dimension d = tally.worst();
  if (why && tally.first_message.empty() && req.numa_aligned)
    return fail(Dimension::kNuma, fmt::format("node {}: no NUMA node holds {} fitting GPUs with the CPUs and memory",
                                              name, req.gpu_count));
  return fail(d, why ? (tally.first_message.empty()
                            ? fmt::format("node {}: fewer than {} GPUs fit", name, req.gpu_count)
                            : fmt::format("{} (fewer than {} GPUs fit)", tally.first_message, req.gpu_count))
                     : std::string());
}

}  // namespace gpupack
