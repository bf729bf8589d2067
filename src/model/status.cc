#include "model/status.h"

namespace gpupack {

std::string_view to_string(Dimension d) {
  switch (d) {
    case Dimension::kNone:
      return "none";
    case Dimension::kCpu:
      return "cpu";
    case Dimension::kMemory:
      return "memory";
    case Dimension::kGpuMilli:
      return "gpu_milli";
    case Dimension::kGpuMemory:
      return "gpu_memory";
    case Dimension::kMigSlot:
      return "mig_slot";
    case Dimension::kModel:
      return "model";
    case Dimension::kTaint:
      return "taint";
    case Dimension::kTopology:
      return "topology";
    case Dimension::kGpuBandwidth:
      return "gpu_bandwidth";
    case Dimension::kGpuL2:
      return "gpu_l2";
    case Dimension::kSharingMode:
      return "sharing_mode";
    case Dimension::kMpsClients:
      return "mps_clients";
    case Dimension::kNuma:
      return "numa";
  }
  return "unknown";
}

}  // namespace gpupack
