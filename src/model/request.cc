#include "model/request.h"

#include "util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace gpupack {

std::string_view to_string(GpuMode m) {
  switch (m) {
    case GpuMode::kShared:
      return "shared";
    case GpuMode::kExclusive:
      return "exclusive";
    case GpuMode::kTimeSlice:
      return "time-slice";
    case GpuMode::kMps:
      return "mps";
    case GpuMode::kMig:
      return "mig";
  }
  return "unknown";
}

bool parse_gpu_mode(std::string_view text, GpuMode* out) {
  for (int i = 0; i < kGpuModeCount; ++i) {
    if (iequals(text, to_string(static_cast<GpuMode>(i)))) {
      *out = static_cast<GpuMode>(i);
      return true;
    }
  }
  if (iequals(text, "timeslice") || iequals(text, "time-slicing") || iequals(text, "timeslicing")) {
    *out = GpuMode::kTimeSlice;
    return true;
  }
  return false;
}

std::string_view to_string(WorkloadClass c) {
  switch (c) {
    case WorkloadClass::kUnspecified:
      return "unspecified";
    case WorkloadClass::kLatencySensitive:
      return "latency-sensitive";
    case WorkloadClass::kTraining:
      return "training";
    case WorkloadClass::kBatchInference:
      return "batch-inference";
    case WorkloadClass::kBurstyInference:
      return "bursty-inference";
  }
  return "unknown";
}

bool parse_workload_class(std::string_view text, WorkloadClass* out) {
  for (int i = 0; i <= static_cast<int>(WorkloadClass::kBurstyInference); ++i) {
    if (iequals(text, to_string(static_cast<WorkloadClass>(i)))) {
      *out = static_cast<WorkloadClass>(i);
      return true;
    }
  }
  if (text.empty()) {
    *out = WorkloadClass::kUnspecified;
    return true;
  }
  return false;
}

std::string_view to_string(GpuScope s) {
  switch (s) {
    case GpuScope::kAny:
      return "any";
    case GpuScope::kNvlink:
      return "nvlink";
    case GpuScope::kPcieSwitch:
      return "pcie-switch";
    case GpuScope::kNuma:
      return "numa";
  }
  return "unknown";
}

bool parse_gpu_scope(std::string_view text, GpuScope* out) {
  for (int i = 0; i <= static_cast<int>(GpuScope::kNuma); ++i) {
    if (iequals(text, to_string(static_cast<GpuScope>(i)))) {
      *out = static_cast<GpuScope>(i);
      return true;
    }
  }
  if (text.empty()) {
    *out = GpuScope::kAny;
    return true;
  }
  return false;
}

ModeMask class_modes(WorkloadClass c) {
  switch (c) {
    case WorkloadClass::kUnspecified:
      return 0;
    case WorkloadClass::kLatencySensitive:
      return mode_bit(GpuMode::kMig) | mode_bit(GpuMode::kExclusive);
    case WorkloadClass::kTraining:
      return mode_bit(GpuMode::kExclusive) | mode_bit(GpuMode::kMig);
    case WorkloadClass::kBatchInference:
      return mode_bit(GpuMode::kMig) | mode_bit(GpuMode::kMps) | mode_bit(GpuMode::kTimeSlice);
    case WorkloadClass::kBurstyInference:
      return mode_bit(GpuMode::kTimeSlice) | mode_bit(GpuMode::kMps);
  }
  return 0;
}

ModeMask Request::effective_modes() const {
  if (modes != 0) return modes;
  if (ModeMask m = class_modes(workload_class); m != 0) return m;
  if (!mig_profile.empty() || mig_min_sm > 0) return mode_bit(GpuMode::kMig);
  if (gpu_milli >= kGpuMilliPerGpu)
    return mode_bit(GpuMode::kShared) | mode_bit(GpuMode::kExclusive) | mode_bit(GpuMode::kTimeSlice);
  return mode_bit(GpuMode::kShared) | mode_bit(GpuMode::kTimeSlice) | mode_bit(GpuMode::kMps);
}

std::string Request::validate() const {
  if (cpu_milli < 0) return fmt::format("cpu_milli is negative ({})", cpu_milli);
  if (memory_mib < 0) return fmt::format("memory_mib is negative ({})", memory_mib);
  if (gpu_count < 0) return fmt::format("gpu count is negative ({})", gpu_count);
  if (gpu_count > kMaxGpusPerNode)
    return fmt::format("gpu count {} exceeds {} GPUs per node", gpu_count, kMaxGpusPerNode);
  if (gpu_count == 0 && gpu_milli != 0) return fmt::format("gpu_milli {} given for a request of 0 GPUs", gpu_milli);
  if (gpu_count > 0 && (gpu_milli < 1 || gpu_milli > kGpuMilliPerGpu))
    return fmt::format("gpu_milli {} is outside 1..{}", gpu_milli, kGpuMilliPerGpu);
  if (is_plain()) return {};
  if (gpu_memory_mib < 0) return fmt::format("gpu_memory_mib is negative ({})", gpu_memory_mib);
  if (bandwidth_milli < 0 || bandwidth_milli > kGpuMilliPerGpu)
    return fmt::format("bandwidth_milli {} is outside 0..{}", bandwidth_milli, kGpuMilliPerGpu);
  if (l2_milli < 0 || l2_milli > kGpuMilliPerGpu)
    return fmt::format("l2_milli {} is outside 0..{}", l2_milli, kGpuMilliPerGpu);
  for (const MigDeviceCount& d : mig_devices)
    if (d.profile.empty() || d.count <= 0)
      return fmt::format("MIG device count {} for profile \"{}\" is not positive or has no profile", d.count,
                         d.profile);
  if (mig_min_sm < 0) return fmt::format("mig_min_sm is negative ({})", mig_min_sm);
  if (modes >= (1u << kGpuModeCount)) return fmt::format("modes mask {} has unknown bits", modes);
  const ModeMask m = effective_modes();
  if (gpu_count > 0 && m == mode_bit(GpuMode::kMig) && gpu_count != 1)
    return fmt::format("a MIG request asks for one instance, not {} GPUs", gpu_count);
  if (gpu_count > 0 && m == mode_bit(GpuMode::kExclusive) && gpu_milli != kGpuMilliPerGpu)
    return fmt::format("an exclusive-only request needs whole GPUs, not {} milli", gpu_milli);
  if (gpu_count == 0 && (gpu_memory_mib > 0 || !mig_profile.empty() || gpu_scope != GpuScope::kAny))
    return "GPU fields given for a request of 0 GPUs";
  return {};
}

}  // namespace gpupack
