#include "model/cluster_state.h"

#include <map>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include <unordered_map>
#include <unordered_set>
#include "mig/mig_geometry.h"

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
      throw std::invalid_argument(
          fmt::format("node '{}': {} GPUs, at most {} supported", s.name, s.gpu_count, kMaxGpusPerNode));
    if (s.gpu_count > 0 && s.gpu_model >= GpuCatalog::builtin().size())
      throw std::invalid_argument(fmt::format("node '{}': unknown GPU model id", s.name));
    names_.push_back(s.name);
  }
  for (const auto& name : names_) {
    if (!seen.insert(name).second) throw std::invalid_argument(fmt::format("node '{}' appears twice", name));
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
  init_hardware();
  tie_order_stamp_ = next_stamp();
  classes_.reset(n);
  for (size_t i = 0; i < n; ++i) reclassify(i);
}

namespace {
// FNV-1a over 64-bit words: cheap and good enough to spread node states;
// classes compare states exactly, so a collision only costs a comparison.
struct Fnv {
  uint64_t h = 1469598103934665603ULL;
  void add(uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
};
}  // namespace

uint64_t ClusterState::node_state_hash(size_t n) const {
  Fnv f;
  // Nodes with a hardware setup or a MIG GPU are classes of their own.
  bool alone = hw_node_[n] != 0;
  for (int g = 0; g < gpu_count_[n]; ++g) alone |= gpu_mig_[static_cast<size_t>(gpu_begin_[n] + g)] >= 0;
  if (alone) {
    f.add(~uint64_t{0});
    f.add(n);
    return f.h;
  }
  f.add(static_cast<uint64_t>(cpu_total_[n]));
  f.add(static_cast<uint64_t>(cpu_free_[n]));
  f.add(static_cast<uint64_t>(mem_total_[n]));
  f.add(static_cast<uint64_t>(mem_free_[n]));
  f.add(static_cast<uint64_t>(gpu_count_[n]) << 32 | gpu_model_[n]);
  for (int g = 0; g < gpu_count_[n]; ++g) {
    const size_t k = static_cast<size_t>(gpu_begin_[n] + g);
    f.add(static_cast<uint64_t>(gpu_free_[k]));
    f.add(static_cast<uint64_t>(gpu_mem_free_[k]));
  }
  for (uint16_t c : shapes_[n]) f.add(c);
  for (const MigDeviceCount& d : mig_dev_free_[n]) f.add(static_cast<uint64_t>(d.count));
  return f.h;
}

bool ClusterState::same_node_state(NodeId na, NodeId nb) const {
  const size_t a = index(na), b = index(nb);
  if (a == b) return true;
  if (hw_node_[a] || hw_node_[b]) return false;
  if (cpu_total_[a] != cpu_total_[b] || cpu_free_[a] != cpu_free_[b] || mem_total_[a] != mem_total_[b] ||
      mem_free_[a] != mem_free_[b] || gpu_count_[a] != gpu_count_[b] || gpu_model_[a] != gpu_model_[b] ||
      shapes_[a] != shapes_[b] || specs_[a].gpu_memory_mib != specs_[b].gpu_memory_mib)
    return false;
  const auto& da = mig_dev_free_[a];
  const auto& db = mig_dev_free_[b];
  if (da.size() != db.size()) return false;
  for (size_t d = 0; d < da.size(); ++d) {
    if (da[d].profile != db[d].profile || da[d].count != db[d].count) return false;
    if (specs_[a].mig_devices[d].count != specs_[b].mig_devices[d].count) return false;
  }
  if (numa_count_[a] != numa_count_[b]) return false;
  for (int u = 0; u < numa_count_[a]; ++u) {
    const size_t ua = static_cast<size_t>(numa_begin_[a] + u), ub = static_cast<size_t>(numa_begin_[b] + u);
    if (numa_cpu_total_[ua] != numa_cpu_total_[ub] || numa_cpu_free_[ua] != numa_cpu_free_[ub] ||
        numa_mem_total_[ua] != numa_mem_total_[ub] || numa_mem_free_[ua] != numa_mem_free_[ub])
      return false;
  }
  for (int g = 0; g < gpu_count_[a]; ++g) {
    const size_t ga = static_cast<size_t>(gpu_begin_[a] + g), gb = static_cast<size_t>(gpu_begin_[b] + g);
    if (gpu_mig_[ga] >= 0 || gpu_mig_[gb] >= 0) return false;
    if (gpu_free_[ga] != gpu_free_[gb] || gpu_mode_[ga] != gpu_mode_[gb] || gpu_mem_total_[ga] != gpu_mem_total_[gb] ||
        gpu_mem_free_[ga] != gpu_mem_free_[gb] || gpu_bw_free_[ga] != gpu_bw_free_[gb] ||
        gpu_l2_free_[ga] != gpu_l2_free_[gb] || gpu_clients_[ga] != gpu_clients_[gb] ||
        gpu_replicas_[ga] != gpu_replicas_[gb] || gpu_oversub_[ga] != gpu_oversub_[gb] ||
        gpu_numa_[ga] != gpu_numa_[gb] || gpu_pcie_[ga] != gpu_pcie_[gb] || gpu_nvlink_[ga] != gpu_nvlink_[gb])
      return false;
  }
  return true;
}

NodeSummary ClusterState::node_summary(size_t n) const {
  NodeSummary sum;
  sum.cpu_free_milli = cpu_free_[n];
  sum.memory_free_mib = mem_free_[n];
  sum.gpu_count = static_cast<int16_t>(gpu_count_[n]);
  sum.plain = hw_node_[n] == 0;
  for (int g = 0; g < gpu_count_[n]; ++g) {
    const size_t k = static_cast<size_t>(gpu_begin_[n] + g);
    sum.plain &= gpu_mig_[k] < 0;
    sum.max_gpu_free_milli = std::max(sum.max_gpu_free_milli, gpu_free_[k]);
    sum.whole_free_gpus += gpu_free_[k] == kGpuMilliPerGpu ? 1 : 0;
  }
  return sum;
}

void ClusterState::reclassify(size_t n) {
  classes_.place(static_cast<int32_t>(n), node_state_hash(n), node_summary(n),
                 [this](int32_t a, int32_t b) { return same_node_state(NodeId{a}, NodeId{b}); });
}

void ClusterState::set_tie_order(std::vector<int64_t> rank) {
  classes_.set_order(std::move(rank));
  tie_order_stamp_ = next_stamp();
}

std::optional<int> mig_profile_for(const MigGeometry& geo, const Request& req) {
  if (!req.mig_profile.empty()) return geo.find(req.mig_profile);
  int sm = req.mig_min_sm;
  if (sm == 0 && req.gpu_memory_mib == 0) {
    int full_sm = 0;
    for (const MigProfile& p : geo.profiles) full_sm = std::max(full_sm, p.sm_count);
    sm = static_cast<int>((int64_t{req.gpu_milli} * full_sm + kGpuMilliPerGpu - 1) / kGpuMilliPerGpu);
  }
  return smallest_profile_for(geo, req.gpu_memory_mib, sm);
}

void ClusterState::init_hardware() {
  const size_t n = specs_.size(), gpus = gpu_free_.size();
  hw_node_.assign(n, 0);
  gpu_mode_.assign(gpus, GpuMode::kShared);
  gpu_mem_total_.assign(gpus, 0);
  gpu_mem_free_.assign(gpus, 0);
  gpu_bw_free_.assign(gpus, kGpuMilliPerGpu);
  gpu_l2_free_.assign(gpus, kGpuMilliPerGpu);
  gpu_clients_.assign(gpus, 0);
  gpu_replicas_.assign(gpus, 0);
  gpu_oversub_.assign(gpus, 1.0);
  gpu_mig_.assign(gpus, -1);
  gpu_numa_.assign(gpus, 0);
  gpu_pcie_.assign(gpus, -1);
  gpu_nvlink_.assign(gpus, -1);
  numa_begin_.resize(n);
  numa_count_.resize(n);
  mig_dev_free_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    const NodeSpec& s = specs_[i];
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument(fmt::format("node '{}': {}", s.name, what));
    };
    hw_node_[i] = s.has_hardware_setup() ? 1 : 0;
    numa_begin_[i] = static_cast<int32_t>(numa_cpu_total_.size());
    if (s.numa.empty()) {
      numa_count_[i] = 1;
      numa_cpu_total_.push_back(s.cpu_milli);
      numa_mem_total_.push_back(s.memory_mib);
    } else {
      if (s.numa.size() > 64) fail("more than 64 NUMA nodes");
      int64_t cpu = 0, mem = 0;
      for (const NumaSpec& u : s.numa) {
        if (u.cpu_milli < 0 || u.memory_mib < 0) fail("negative NUMA capacity");
        cpu += u.cpu_milli;
        mem += u.memory_mib;
        numa_cpu_total_.push_back(u.cpu_milli);
        numa_mem_total_.push_back(u.memory_mib);
      }
      if (cpu != s.cpu_milli || mem != s.memory_mib)
        fail(fmt::format("NUMA nodes hold {} cpu milli and {} MiB, the node {} and {}", cpu, mem, s.cpu_milli,
                         s.memory_mib));
      numa_count_[i] = static_cast<int32_t>(s.numa.size());
    }
    if (s.gpu_memory_mib < 0) fail("negative GPU memory");
    for (size_t d = 0; d < s.mig_devices.size(); ++d) {
      const MigDeviceCount& dev = s.mig_devices[d];
      if (dev.profile.empty() || dev.count < 0)
        fail(fmt::format("MIG device count {} for \"{}\"", dev.count, dev.profile));
      for (size_t e = 0; e < d; ++e)
        if (s.mig_devices[e].profile == dev.profile) fail(fmt::format("MIG devices \"{}\" given twice", dev.profile));
    }
    mig_dev_free_[i] = s.mig_devices;
    if (s.gpu_count == 0) {
      if (!s.gpus.empty()) fail("GPU setup given for a node without GPUs");
      continue;
    }
    const GpuModelSpec& model = GpuCatalog::builtin().spec(s.gpu_model);
    if (!s.gpus.empty() && static_cast<int32_t>(s.gpus.size()) != s.gpu_count)
      fail(fmt::format("{} GPU setups for {} GPUs", s.gpus.size(), s.gpu_count));
    for (int g = 0; g < s.gpu_count; ++g) {
      const size_t k = static_cast<size_t>(gpu_begin_[i] + g);
      gpu_mem_total_[k] = gpu_mem_free_[k] = s.gpu_memory_mib > 0 ? s.gpu_memory_mib : model.memory_mib;
      if (s.gpus.empty()) continue;
      const GpuSetup& setup = s.gpus[static_cast<size_t>(g)];
      const auto gfail = [&](const std::string& what) { fail(fmt::format("GPU {}: {}", g, what)); };
      gpu_mode_[k] = setup.mode;
      if (setup.numa < 0 || setup.numa >= numa_count_[i])
        gfail(fmt::format("NUMA node {} does not exist ({} NUMA nodes)", setup.numa, numa_count_[i]));
      gpu_numa_[k] = setup.numa;
      gpu_pcie_[k] = setup.pcie_switch;
      gpu_nvlink_[k] = setup.nvlink_domain;
      switch (setup.mode) {
        case GpuMode::kMps:
          if (setup.mps_replicas < 2 || setup.mps_replicas > model.mps_max_clients())
            gfail(fmt::format("MPS replicas {} outside 2..{} (the {} client cap)", setup.mps_replicas,
                              model.mps_max_clients(), model.name));
          if (model.memory_mib == 0) gfail(fmt::format("MPS needs a known memory size; {} has none", model.name));
          gpu_replicas_[k] = static_cast<int16_t>(setup.mps_replicas);
          break;
        case GpuMode::kTimeSlice:
          if (!(setup.oversubscription >= 1.0 && setup.oversubscription <= 64.0))
            gfail(fmt::format("oversubscription {} outside 1..64", setup.oversubscription));
          gpu_oversub_[k] = setup.oversubscription;
          break;
        case GpuMode::kMig: {
          const MigGeometry* geo = mig_geometry(s.gpu_model);
          if (!geo) gfail(fmt::format("model {} is not MIG-capable", model.name));
          MigGpuState state(*geo);
          for (size_t p = 0; p < setup.mig_layout.size(); ++p) {
            const MigPlacement& pl = setup.mig_layout[p];
            if (std::string why = state.place(pl.profile, pl.start); !why.empty())
              gfail(fmt::format("MIG layout instance {}: {}", p, why));
          }
          if (!setup.mig_fixed_layout && !state.empty())
            gfail("a MIG layout is given but the GPU is not marked fixed-layout");
          gpu_mig_[k] = static_cast<int32_t>(mig_.size());
          mig_.push_back(state);
          mig_busy_.push_back(0);
          mig_fixed_.push_back(setup.mig_fixed_layout ? 1 : 0);
          break;
        }
        default:
          break;
      }
    }
  }
  numa_cpu_free_ = numa_cpu_total_;
  numa_mem_free_ = numa_mem_total_;
}

int32_t ClusterState::charge(size_t k, const Request& req, const Assignment& where) const {
  switch (gpu_mode_[k]) {
    case GpuMode::kMig: {
      const MigGeometry& geo = mig_[static_cast<size_t>(gpu_mig_[k])].geometry();
      if (where.mig_profile < 0 || where.mig_profile >= geo.size()) return 0;
      return kGpuMilliPerGpu * geo.profile(where.mig_profile).memory_slices / geo.memory_slices;
    }
    case GpuMode::kTimeSlice:
      return static_cast<int32_t>(std::ceil(static_cast<double>(req.gpu_milli) / gpu_oversub_[k] - 1e-9));
    case GpuMode::kExclusive:
      return kGpuMilliPerGpu;
    default:
      return where.gpu_milli;
  }
}

Dimension ClusterState::gpu_fit(NodeId node, int g, const Request& req, int mig_profile, int mig_start,
                                std::string* message) const {
  const size_t k = gi(node, g);
  const auto no = [&](Dimension d, std::string_view f, const auto&... args) {
    if (message)
      *message =
          fmt::format("node {}: GPU {}: ", names_[index(node)], g) + fmt::vformat(f, fmt::make_format_args(args...));
    return d;
  };
  const GpuMode mode = gpu_mode_[k];
  const ModeMask modes = req.effective_modes();
  if (!mode_accepts(mode, modes))
    return no(Dimension::kSharingMode, "{} GPU, request allows other modes", to_string(mode));
  const int32_t free = gpu_free_[k];
  const int64_t mem_total = gpu_mem_total_[k];
  if (mode == GpuMode::kMig) {
    const size_t m = static_cast<size_t>(gpu_mig_[k]);
    const MigGpuState& st = mig_[m];
    const MigGeometry& geo = st.geometry();
    if (req.gpu_count != 1)
      return no(Dimension::kMigSlot, "a MIG instance serves one GPU, {} requested", req.gpu_count);
    const std::optional<int> want = mig_profile_for(geo, req);
    if (!want)
      return no(Dimension::kMigSlot, "no {} MIG profile matches (profile '{}', {} MiB, {} SMs)", geo.model_name,
                req.mig_profile, req.gpu_memory_mib, req.mig_min_sm);
    if (mig_profile < 0) {
      // Any start: is some instance of the profile available?
      if (mig_fixed_[m]) {
        for (const MigPlacement& p : st.instances())
          if (p.profile == *want && !((mig_busy_[m] >> p.start) & 1u)) return Dimension::kNone;
        return no(Dimension::kMigSlot, "no free {} instance in the fixed layout", geo.profile(*want).name);
      }
      if (st.can_place_anywhere(*want)) return Dimension::kNone;
      return no(Dimension::kMigSlot, "{}", st.why_not_anywhere(*want));
    }
    if (mig_profile != *want)
      return no(Dimension::kMigSlot, "profile {} is not the one requested ({})",
                mig_profile < geo.size() ? geo.profile(mig_profile).name : std::string("?"), geo.profile(*want).name);
    if (mig_start < 0 || mig_start >= kMaxMigMemorySlices)
      return no(Dimension::kMigSlot, "start {} out of range", mig_start);
    if (mig_fixed_[m]) {
      bool found = false;
      for (const MigPlacement& p : st.instances()) found |= p.profile == mig_profile && p.start == mig_start;
      if (!found)
        return no(Dimension::kMigSlot, "no {} instance at slice {} in the fixed layout", geo.profile(*want).name,
                  mig_start);
      if ((mig_busy_[m] >> mig_start) & 1u)
        return no(Dimension::kMigSlot, "the {} instance at slice {} is in use", geo.profile(*want).name, mig_start);
      return Dimension::kNone;
    }
    if (std::string why = st.why_not(mig_profile, mig_start); !why.empty()) return no(Dimension::kMigSlot, "{}", why);
    return Dimension::kNone;
  }
  if (mode == GpuMode::kExclusive) {
    if (req.gpu_milli < kGpuMilliPerGpu)
      return no(Dimension::kSharingMode, "exclusive GPU, request asks for a {} milli share", req.gpu_milli);
    if (free < kGpuMilliPerGpu) return no(Dimension::kGpuMilli, "exclusive GPU in use");
  } else if (mode == GpuMode::kMps) {
    const int replicas = gpu_replicas_[k];
    if (gpu_clients_[k] >= replicas)
      return no(Dimension::kMpsClients, "MPS clients {} at the cap {}", gpu_clients_[k], replicas);
    if (int64_t{req.gpu_milli} * replicas > kGpuMilliPerGpu)
      return no(Dimension::kGpuMilli, "{} milli exceeds the MPS thread share {}% (1/{} replicas)", req.gpu_milli,
                100 / replicas, replicas);
    if (req.gpu_memory_mib * replicas > mem_total)
      return no(Dimension::kGpuMemory, "{} MiB exceeds the MPS per-client limit {} MiB", req.gpu_memory_mib,
                mem_total / replicas);
    if (free < req.gpu_milli) return no(Dimension::kGpuMilli, "free {} < {} milli", free, req.gpu_milli);
  } else {
    const int32_t need = mode == GpuMode::kTimeSlice ? charge(k, req, Assignment{}) : req.gpu_milli;
    if (free < need) return no(Dimension::kGpuMilli, "free {} < {} milli", free, need);
  }
  if (mem_total > 0 && gpu_mem_free_[k] < req.gpu_memory_mib)
    return no(Dimension::kGpuMemory, "memory free {} < {} MiB", gpu_mem_free_[k], req.gpu_memory_mib);
  if (gpu_bw_free_[k] < req.bandwidth_milli)
    return no(Dimension::kGpuBandwidth, "bandwidth share free {} < {} milli", gpu_bw_free_[k], req.bandwidth_milli);
  if (gpu_l2_free_[k] < req.l2_milli)
    return no(Dimension::kGpuL2, "L2 share free {} < {} milli", gpu_l2_free_[k], req.l2_milli);
  return Dimension::kNone;
}

Status ClusterState::check_hardware(const Request& req, const Assignment& where) const {
  const size_t n = index(where.node);
  if (where.numa >= 0) {
    if (where.numa >= numa_count_[n])
      return Status::error(fmt::format("node {}: NUMA node {} does not exist", names_[n], where.numa));
    const size_t u = static_cast<size_t>(numa_begin_[n] + where.numa);
    if (numa_cpu_free_[u] < req.cpu_milli)
      return Status::unschedulable(Dimension::kNuma, fmt::format("node {}: NUMA {} cpu free {} < {} milli", names_[n],
                                                                 where.numa, numa_cpu_free_[u], req.cpu_milli));
    if (numa_mem_free_[u] < req.memory_mib)
      return Status::unschedulable(Dimension::kNuma, fmt::format("node {}: NUMA {} memory free {} < {} MiB", names_[n],
                                                                 where.numa, numa_mem_free_[u], req.memory_mib));
  } else if (req.numa_aligned) {
    return Status::error(fmt::format("node {}: numa_aligned request assigned no NUMA node", names_[n]));
  }
  if (req.gpu_count == 0) return Status::ok();
  const bool mig = where.mig_profile >= 0;
  if (mig && req.gpu_count != 1) return Status::error("a MIG assignment names one GPU");
  int group = -2;
  for (int g = 0; g < gpu_count_[n]; ++g) {
    if (!(where.gpu_mask & (1u << g))) continue;
    const size_t k = static_cast<size_t>(gpu_begin_[n] + g);
    if (where.numa >= 0 && gpu_numa_[k] != where.numa)
      return Status::unschedulable(Dimension::kNuma, fmt::format("node {}: GPU {} is on NUMA {}, not {}", names_[n], g,
                                                                 gpu_numa_[k], where.numa));
    if (req.scope_required && req.gpu_scope != GpuScope::kAny) {
      const int id = req.gpu_scope == GpuScope::kNvlink       ? gpu_nvlink_[k]
                     : req.gpu_scope == GpuScope::kPcieSwitch ? gpu_pcie_[k]
                                                              : gpu_numa_[k];
      if (id < 0 || (group != -2 && id != group))
        return Status::unschedulable(Dimension::kTopology,
                                     fmt::format("node {}: GPUs not in one {}", names_[n], to_string(req.gpu_scope)));
      group = id;
    }
    if (gpu_mode_[k] != GpuMode::kMig && mig)
      return Status::error(
          fmt::format("node {}: GPU {} is not in MIG mode; the assignment names an instance", names_[n], g));
    if (gpu_mode_[k] == GpuMode::kMig && !mig)
      return Status::error(
          fmt::format("node {}: GPU {} is in MIG mode; the assignment names no instance", names_[n], g));
    std::string msg;
    const Dimension d = gpu_fit(where.node, g, req, mig ? where.mig_profile : -1, where.mig_start, &msg);
    if (d != Dimension::kNone) return Status::unschedulable(d, msg);
  }
  return Status::ok();
}

int64_t ClusterState::mig_devices_total(NodeId n, std::string_view profile) const {
  for (const MigDeviceCount& d : specs_[index(n)].mig_devices)
    if (d.profile == profile) return d.count;
  return 0;
}

int64_t ClusterState::mig_devices_free(NodeId n, std::string_view profile) const {
  for (const MigDeviceCount& d : mig_dev_free_[index(n)])
    if (d.profile == profile) return d.count;
  return 0;
}

Status ClusterState::check_mig_devices(NodeId n, const Request& req) const {
  for (const MigDeviceCount& d : req.mig_devices) {
    const int64_t total = mig_devices_total(n, d.profile), free = mig_devices_free(n, d.profile);
    if (total < d.count)
      return Status::unresolvable(Dimension::kMigSlot, fmt::format("node {} offers {} MIG {} devices, {} requested",
                                                                   node_name(n), total, d.profile, d.count));
    if (free < d.count)
      return Status::unschedulable(Dimension::kMigSlot, fmt::format("node {} has {} free MIG {} devices, {} requested",
                                                                    node_name(n), free, d.profile, d.count));
  }
  return Status::ok();
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
    return Status::unschedulable(
        Dimension::kCpu, fmt::format("node {}: cpu free {} < {} milli", names_[n], cpu_free_[n], req.cpu_milli));
  if (mem_free_[n] < req.memory_mib)
    return Status::unschedulable(
        Dimension::kMemory, fmt::format("node {}: memory free {} < {} MiB", names_[n], mem_free_[n], req.memory_mib));
  if (!req.mig_devices.empty()) {
    if (Status st = check_mig_devices(where.node, req); !st.is_ok()) return st;
  }
  if (req.gpu_count == 0) return where.numa >= 0 || req.numa_aligned ? check_hardware(req, where) : Status::ok();
  if (!model_allowed(req.allowed_models, gpu_model_[n]))
    return Status::unresolvable(Dimension::kModel, fmt::format("node {}: GPU model {} not allowed", names_[n],
                                                               GpuCatalog::builtin().spec(gpu_model_[n]).name));
  if (gpu_count_[n] < 32 && (where.gpu_mask >> gpu_count_[n]) != 0)
    return Status::error(fmt::format("node {}: GPU index beyond its {} GPUs", names_[n], gpu_count_[n]));
  if (hw_node_[n] || !req.is_plain() || where.mig_profile >= 0 || where.numa >= 0) return check_hardware(req, where);
  for (int g = 0; g < gpu_count_[n]; ++g) {
    if (!(where.gpu_mask & (1u << g))) continue;
    if (gpu_free_[gpu_begin_[n] + g] < req.gpu_milli)
      return Status::unschedulable(Dimension::kGpuMilli, fmt::format("node {}: GPU {} free {} < {} milli", names_[n], g,
                                                                     gpu_free_[gpu_begin_[n] + g], req.gpu_milli));
  }
  return Status::ok();
}

void ClusterState::apply_hardware(const Request& req, const Assignment& where, int sign) {
  const size_t n = index(where.node);
  if (where.numa >= 0) {
    const size_t u = static_cast<size_t>(numa_begin_[n] + where.numa);
    numa_cpu_free_[u] -= sign * req.cpu_milli;
    numa_mem_free_[u] -= sign * req.memory_mib;
  }
  int64_t gpu_delta = 0;
  for (int g = 0; g < gpu_count_[n]; ++g) {
    if (!(where.gpu_mask & (1u << g))) continue;
    const size_t k = static_cast<size_t>(gpu_begin_[n] + g);
    const int32_t c = charge(k, req, where);
    gpu_free_[k] -= sign * c;
    gpu_delta += c;
    if (gpu_mode_[k] == GpuMode::kMig) {
      const size_t m = static_cast<size_t>(gpu_mig_[k]);
      if (!mig_fixed_[m]) {
        if (sign > 0)
          mig_[m].place(where.mig_profile, where.mig_start);
        else
          mig_[m].remove(where.mig_profile, where.mig_start);
      }
      mig_busy_[m] ^= static_cast<uint8_t>(1u << where.mig_start);
      continue;
    }
    gpu_mem_free_[k] -= sign * req.gpu_memory_mib;
    gpu_bw_free_[k] -= sign * req.bandwidth_milli;
    gpu_l2_free_[k] -= sign * req.l2_milli;
    if (gpu_mode_[k] == GpuMode::kMps) gpu_clients_[k] = static_cast<int16_t>(gpu_clients_[k] + sign);
  }
  gpu_free_total_[n] -= sign * gpu_delta;
  gpu_used_milli_ += sign * gpu_delta;
}

void ClusterState::apply(PodId pod, const Request& req, const Assignment& where, int sign) {
  const size_t n = index(where.node);
  cpu_free_[n] -= sign * req.cpu_milli;
  mem_free_[n] -= sign * req.memory_mib;
  for (const MigDeviceCount& d : req.mig_devices)
    for (MigDeviceCount& have : mig_dev_free_[n])
      if (have.profile == d.profile) have.count -= sign * d.count;
  if (hw_node_[n] || !req.is_plain() || where.mig_profile >= 0 || where.numa >= 0) {
    apply_hardware(req, where, sign);
  } else {
    for (int g = 0; g < gpu_count_[n]; ++g) {
      if (where.gpu_mask & (1u << g)) gpu_free_[gpu_begin_[n] + g] -= sign * where.gpu_milli;
    }
    const int64_t gpu_delta = int64_t{where.gpu_count()} * where.gpu_milli;
    gpu_free_total_[n] -= sign * gpu_delta;
    gpu_used_milli_ += sign * gpu_delta;
  }
  if (int tag = shape_tag(req); tag >= 0) shapes_[n][tag] += sign;
  version_[n] = next_stamp();
  reclassify(n);
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
    return Status::error(
        fmt::format("pod {} is already bound to node {}", static_cast<int>(pod), names_[index(assignment(pod).node)]));
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
  std::vector<int64_t> gpu_used(gpu_free_.size(), 0), gpu_mem_used(gpu_free_.size(), 0);
  std::vector<int64_t> gpu_bw_used(gpu_free_.size(), 0), gpu_l2_used(gpu_free_.size(), 0);
  std::vector<int64_t> gpu_clients(gpu_free_.size(), 0);
  std::vector<int64_t> numa_cpu_used(numa_cpu_total_.size(), 0), numa_mem_used(numa_cpu_total_.size(), 0);
  std::vector<std::vector<MigPlacement>> mig_in_use(mig_.size());
  std::vector<ShapeCounts> shapes(n, ShapeCounts{});
  std::vector<std::map<std::string, int64_t>> mig_dev_used(n);
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
    for (const MigDeviceCount& d : r.request.mig_devices) mig_dev_used[node][d.profile] += d.count;
    if (r.assignment.numa >= 0) {
      numa_cpu_used[numa_begin_[node] + r.assignment.numa] += r.request.cpu_milli;
      numa_mem_used[numa_begin_[node] + r.assignment.numa] += r.request.memory_mib;
    }
    for (int g = 0; g < gpu_count_[node]; ++g) {
      if (!(r.assignment.gpu_mask & (1u << g))) continue;
      const size_t k = static_cast<size_t>(gpu_begin_[node] + g);
      const int32_t c = charge(k, r.request, r.assignment);
      gpu_used[k] += c;
      used_total += c;
      if (gpu_mode_[k] == GpuMode::kMig) {
        mig_in_use[static_cast<size_t>(gpu_mig_[k])].push_back({r.assignment.mig_profile, r.assignment.mig_start});
        continue;
      }
      gpu_mem_used[k] += r.request.gpu_memory_mib;
      gpu_bw_used[k] += r.request.bandwidth_milli;
      gpu_l2_used[k] += r.request.l2_milli;
      gpu_clients[k] += gpu_mode_[k] == GpuMode::kMps;
    }
    if (int tag = shape_tag(r.request); tag >= 0) ++shapes[node][tag];
  }
  if (bound != bound_pods_) errors.push_back(fmt::format("bound pod count {} != {}", bound_pods_, bound));
  if (used_total != gpu_used_milli_)
    errors.push_back(fmt::format("cluster gpu used {} != sum over pods {}", gpu_used_milli_, used_total));
  for (size_t i = 0; i < n; ++i) {
    if (cpu_free_[i] < 0) errors.push_back(fmt::format("node {}: cpu free {} < 0", names_[i], cpu_free_[i]));
    if (mem_free_[i] < 0) errors.push_back(fmt::format("node {}: memory free {} < 0", names_[i], mem_free_[i]));
    if (cpu_free_[i] != cpu_total_[i] - cpu_used[i])
      errors.push_back(
          fmt::format("node {}: cpu free {} != total - used {}", names_[i], cpu_free_[i], cpu_total_[i] - cpu_used[i]));
    if (mem_free_[i] != mem_total_[i] - mem_used[i])
      errors.push_back(fmt::format("node {}: memory free {} != total - used {}", names_[i], mem_free_[i],
                                   mem_total_[i] - mem_used[i]));
    int64_t free_total = 0;
    for (int g = 0; g < gpu_count_[i]; ++g) {
      const int32_t f = gpu_free_[gpu_begin_[i] + g];
      if (f < 0 || f > kGpuMilliPerGpu)
        errors.push_back(fmt::format("node {}: GPU {} free {} outside 0..1000", names_[i], g, f));
      if (f != kGpuMilliPerGpu - gpu_used[gpu_begin_[i] + g])
        errors.push_back(
            fmt::format("node {}: GPU {} free {} != 1000 - used {}", names_[i], g, f, gpu_used[gpu_begin_[i] + g]));
      free_total += f;
      const size_t k = static_cast<size_t>(gpu_begin_[i] + g);
      if (gpu_mem_free_[k] != gpu_mem_total_[k] - gpu_mem_used[k] ||
          gpu_bw_free_[k] != kGpuMilliPerGpu - gpu_bw_used[k] || gpu_l2_free_[k] != kGpuMilliPerGpu - gpu_l2_used[k] ||
          gpu_clients_[k] != gpu_clients[k])
        errors.push_back(fmt::format("node {}: GPU {} memory/bandwidth/L2/client accounting differs", names_[i], g));
      if (gpu_bw_free_[k] < 0 || gpu_l2_free_[k] < 0 || (gpu_mem_total_[k] > 0 && gpu_mem_free_[k] < 0))
        errors.push_back(fmt::format("node {}: GPU {} memory, bandwidth or L2 over-committed", names_[i], g));
      if (gpu_mode_[k] == GpuMode::kMps && gpu_clients_[k] > gpu_replicas_[k])
        errors.push_back(fmt::format("node {}: GPU {} MPS clients above replicas", names_[i], g));
      if (gpu_mig_[k] >= 0) {
        const size_t m = static_cast<size_t>(gpu_mig_[k]);
        uint8_t busy = 0;
        for (const MigPlacement& p : mig_in_use[m]) busy |= static_cast<uint8_t>(1u << p.start);
        if (busy != mig_busy_[m]) errors.push_back(fmt::format("node {}: GPU {} MIG busy mask differs", names_[i], g));
        if (!mig_fixed_[m]) {
          std::vector<MigPlacement> have = mig_[m].instances(), want = mig_in_use[m];
          std::sort(want.begin(), want.end(),
                    [](const MigPlacement& a, const MigPlacement& b) { return a.start < b.start; });
          if (have != want)
            errors.push_back(fmt::format("node {}: GPU {} MIG instances differ from bound pods", names_[i], g));
        }
      }
    }
    for (int u = 0; u < numa_count_[i]; ++u) {
      const size_t k = static_cast<size_t>(numa_begin_[i] + u);
      if (numa_cpu_free_[k] != numa_cpu_total_[k] - numa_cpu_used[k] ||
          numa_mem_free_[k] != numa_mem_total_[k] - numa_mem_used[k])
        errors.push_back(fmt::format("node {}: NUMA {} accounting differs", names_[i], u));
      if (numa_cpu_free_[k] < 0 || numa_mem_free_[k] < 0)
        errors.push_back(fmt::format("node {}: NUMA {} over-committed", names_[i], u));
    }
    if (free_total != gpu_free_total_[i])
      errors.push_back(fmt::format("node {}: gpu free total {} != sum {}", names_[i], gpu_free_total_[i], free_total));
    for (const MigDeviceCount& d : mig_dev_free_[i]) {
      const int64_t total = mig_devices_total(NodeId{static_cast<int32_t>(i)}, d.profile);
      if (d.count < 0 || d.count != total - mig_dev_used[i][d.profile])
        errors.push_back(fmt::format("node {}: MIG {} devices free {} != {} - used {}", names_[i], d.profile, d.count,
                                     total, mig_dev_used[i][d.profile]));
    }
    if (shapes[i] != shapes_[i]) errors.push_back(fmt::format("node {}: pod shape counts differ", names_[i]));
  }
  check_classes(errors);
  return errors;
}

void ClusterState::check_classes(std::vector<std::string>& errors) const {
  // As a rebuild from scratch would group them: each node in a class of its
  // state, no two classes of one state, each class led by its first member.
  const size_t n = names_.size();
  size_t members = 0;
  std::unordered_map<uint64_t, std::vector<int32_t>> leaders;
  for (int32_t c : classes_.classes()) {
    members += static_cast<size_t>(classes_.size(c));
    const int32_t lead = classes_.first(c);
    if (classes_.hash_of(c) != node_state_hash(static_cast<size_t>(lead)))
      errors.push_back(fmt::format("node class of {}: stale state hash", names_[static_cast<size_t>(lead)]));
    for (int32_t other : leaders[classes_.hash_of(c)])
      if (same_node_state(NodeId{lead}, NodeId{other}))
        errors.push_back(fmt::format("nodes {} and {}: same state, two classes", names_[static_cast<size_t>(lead)],
                                     names_[static_cast<size_t>(other)]));
    leaders[classes_.hash_of(c)].push_back(lead);
  }
  if (members != n) errors.push_back(fmt::format("node classes hold {} nodes, the cluster {}", members, n));
  for (const NodeClasses::Live& l : classes_.live()) {
    const NodeSummary want = node_summary(static_cast<size_t>(classes_.first(l.id)));
    if (l.first != classes_.first(l.id) || l.size != classes_.size(l.id) ||
        l.summary.cpu_free_milli != want.cpu_free_milli || l.summary.memory_free_mib != want.memory_free_mib ||
        l.summary.max_gpu_free_milli != want.max_gpu_free_milli || l.summary.whole_free_gpus != want.whole_free_gpus ||
        l.summary.gpu_count != want.gpu_count || l.summary.plain != want.plain)
      errors.push_back(fmt::format("node class of {}: stale summary", names_[static_cast<size_t>(l.first)]));
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t c = classes_.class_of(static_cast<int32_t>(i));
    if (c < 0) {
      errors.push_back(fmt::format("node {}: in no class", names_[i]));
      continue;
    }
    const int32_t lead = classes_.first(c);
    if (!same_node_state(NodeId{static_cast<int32_t>(i)}, NodeId{lead}))
      errors.push_back(fmt::format("node {}: state differs from its class", names_[i]));
    const auto key = [&](int32_t k) { return std::make_pair(classes_.order(k), k); };
    if (key(static_cast<int32_t>(i)) < key(lead))
      errors.push_back(fmt::format("node {}: before its class's first member", names_[i]));
  }
}

}  // namespace gpupack
