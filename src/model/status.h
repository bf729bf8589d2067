// Scheduling outcomes in kube-scheduler's words, with the failed dimension.
//
// Contract: `Status` is a small value. `Code::kUnschedulable` means the
// request may fit after something changes (preemption, departures);
// `kUnschedulableAndUnresolvable` means it cannot fit on that node at all
// (model not allowed, larger than the node); `kError` is bad input. The
// `Dimension` names what failed so that replies and reports can say why.
#pragma once

#include <string>
#include <string_view>

namespace gpupack {

enum class Dimension {
  kNone,
  kCpu,
  kMemory,
  kGpuMilli,
  kGpuMemory,
  kMigSlot,
  kModel,
  kTaint,
  kTopology,
  // Hardware dimensions (docs/HARDWARE.md).
  kGpuBandwidth,
  kGpuL2,
  kSharingMode,
  kMpsClients,
  kNuma,
};
constexpr int kDimensionCount = static_cast<int>(Dimension::kNuma) + 1;

std::string_view to_string(Dimension d);

struct Status {
  enum class Code { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError };

  Code code = Code::kSuccess;
  Dimension dimension = Dimension::kNone;
  std::string message;

  static Status ok() { return {}; }
  static Status unschedulable(Dimension d, std::string msg) { return {Code::kUnschedulable, d, std::move(msg)}; }
  static Status unresolvable(Dimension d, std::string msg) {
    return {Code::kUnschedulableAndUnresolvable, d, std::move(msg)};
  }
  static Status error(std::string msg) { return {Code::kError, Dimension::kNone, std::move(msg)}; }

  bool is_ok() const { return code == Code::kSuccess; }
};

}  // namespace gpupack
