// What a pod asks for, and where it was put.
//
// Contract: `Request` is a plain value in the units its field names say.
// `gpu_milli` is the share of each requested GPU (1000 = a whole GPU); a
// request with gpu_count 0 is CPU-only and has gpu_milli 0. `validate()`
// returns an empty string for a well-formed request, else what is wrong.
// `Assignment` names a node and the GPUs on it (bit i = the node's GPU i),
// each charged `gpu_milli`.
//
// Hardware fields (after `allowed_models`) all default to the openb meaning:
// any sharing mode a plain GPU offers, no GPU memory / bandwidth / L2 need,
// no MIG, no topology or NUMA constraint. A request that sets none of them is
// "plain" (`is_plain()`) and takes the unchanged openb fast path. The charge a
// GPU takes for a request depends on the GPU's sharing mode (docs/HARDWARE.md):
// plain/MPS GPUs take gpu_milli, time-sliced GPUs gpu_milli / oversubscription
// (rounded up), MIG GPUs 1000 x the instance's memory slices / the GPU's.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_catalog.h"
#include "model/ids.h"

namespace gpupack {

constexpr int32_t kGpuMilliPerGpu = 1000;
constexpr int kMaxGpusPerNode = 32;  // GPU sets are 32-bit masks

// How one GPU is shared. kShared is the openb meaning (fractional milli
// accounting, any request that fits); the others are configured per GPU the
// way the NVIDIA device plugin and mig-parted configure them.
enum class GpuMode : uint8_t { kShared = 0, kExclusive = 1, kTimeSlice = 2, kMps = 3, kMig = 4 };
constexpr int kGpuModeCount = 5;
using ModeMask = uint8_t;  // bit = 1 << GpuMode
constexpr ModeMask mode_bit(GpuMode m) { return static_cast<ModeMask>(1u << static_cast<unsigned>(m)); }
std::string_view to_string(GpuMode m);
bool parse_gpu_mode(std::string_view text, GpuMode* out);

// What a workload is; maps to the sharing modes it may use (class_modes()).
enum class WorkloadClass : uint8_t {
  kUnspecified = 0,
  kLatencySensitive,
  kTraining,
  kBatchInference,
  kBurstyInference
};
std::string_view to_string(WorkloadClass c);
bool parse_workload_class(std::string_view text, WorkloadClass* out);

// Grouping of the GPUs of a multi-GPU request inside a node.
enum class GpuScope : uint8_t { kAny = 0, kNvlink = 1, kPcieSwitch = 2, kNuma = 3 };
std::string_view to_string(GpuScope s);
bool parse_gpu_scope(std::string_view text, GpuScope* out);

// A count of MIG devices of one profile, as a device plugin with the "mixed"
// MIG strategy advertises them (nvidia.com/mig-<profile>): the node says how
// many it offers, a pod how many it takes; which GPU holds each is not known.
struct MigDeviceCount {
  std::string profile;  // "1g.10gb"
  int64_t count = 0;
  friend bool operator==(const MigDeviceCount&, const MigDeviceCount&) = default;
};

struct Request {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  int32_t gpu_milli = 0;         // per GPU; 1000 for whole GPUs
  ModelMask allowed_models = 0;  // 0 = any GPU model

  // --- hardware fields; defaults = the openb meaning ---
  ModeMask modes = 0;  // allowed sharing modes; 0 = derived (effective_modes())
  WorkloadClass workload_class = WorkloadClass::kUnspecified;
  int64_t gpu_memory_mib = 0;           // per GPU; 0 = not checked
  int32_t bandwidth_milli = 0;          // share of each GPU's memory bandwidth (1000 = all)
  int32_t l2_milli = 0;                 // share of each GPU's L2 cache (1000 = all)
  std::string mig_profile = {};         // MIG profile by name ("1g.10gb"); empty = by need
  int32_t mig_min_sm = 0;               // MIG by need: at least this many SMs
  GpuScope gpu_scope = GpuScope::kAny;  // keep the GPUs inside one such group
  bool scope_required = false;          // false: prefer the scope; true: fail without it
  bool numa_aligned = false;            // CPUs, memory and GPUs from one NUMA node
  // Advertised MIG devices taken (counted per node, see MigDeviceCount);
  // independent of gpu_count, which stays 0 for a pod asking only for these.
  std::vector<MigDeviceCount> mig_devices = {};

  bool is_gpu() const { return gpu_count > 0; }
  bool is_shared() const { return gpu_count > 0 && gpu_milli < kGpuMilliPerGpu; }
  int64_t total_gpu_milli() const { return int64_t{gpu_count} * gpu_milli; }
  // True when no hardware field is set (the openb fast path applies).
  bool is_plain() const {
    return modes == 0 && workload_class == WorkloadClass::kUnspecified && gpu_memory_mib == 0 && bandwidth_milli == 0 &&
           l2_milli == 0 && mig_profile.empty() && mig_min_sm == 0 && gpu_scope == GpuScope::kAny && !numa_aligned &&
           mig_devices.empty();
  }
  // Allowed modes: `modes` if set, else the workload class's defaults, else
  // MIG when a MIG profile is named, else all non-MIG modes a request of this
  // share can use (whole GPUs: shared, exclusive, time-slice; fractions:
  // shared, time-slice, MPS).
  ModeMask effective_modes() const;
  std::string validate() const;

  friend bool operator==(const Request&, const Request&) = default;
};

// Default modes per class (docs/HARDWARE.md): latency-sensitive -> MIG,
// exclusive; training -> exclusive, MIG; batch inference -> MIG, MPS,
// time-slice; bursty inference -> time-slice, MPS. Shared (openb) GPUs accept
// every non-MIG class. kUnspecified -> 0.
ModeMask class_modes(WorkloadClass c);

struct Assignment {
  NodeId node = kNoNode;
  uint32_t gpu_mask = 0;  // GPUs of the node used, bit i = GPU i
  int32_t gpu_milli = 0;  // the request's per-GPU share (charged per the GPU's mode)
  // MIG requests: the instance (profile index of the GPU's geometry, start
  // memory slice) on the single GPU in gpu_mask; -1 otherwise.
  int8_t mig_profile = -1;
  int8_t mig_start = -1;
  int8_t numa = -1;  // NUMA node whose CPUs/memory are pinned; -1 = none

  int gpu_count() const { return std::popcount(gpu_mask); }
  friend bool operator==(const Assignment&, const Assignment&) = default;
};

}  // namespace gpupack
