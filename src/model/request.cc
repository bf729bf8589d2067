#include "model/request.h"

#include <fmt/format.h>

namespace gpupack {

std::string Request::validate() const {
  if (cpu_milli < 0) return fmt::format("cpu_milli is negative ({})", cpu_milli);
  if (memory_mib < 0) return fmt::format("memory_mib is negative ({})", memory_mib);
  if (gpu_count < 0) return fmt::format("gpu count is negative ({})", gpu_count);
  if (gpu_count > kMaxGpusPerNode)
    return fmt::format("gpu count {} exceeds {} GPUs per node", gpu_count, kMaxGpusPerNode);
  if (gpu_count == 0 && gpu_milli != 0)
    return fmt::format("gpu_milli {} given for a request of 0 GPUs", gpu_milli);
  if (gpu_count > 0 && (gpu_milli < 1 || gpu_milli > kGpuMilliPerGpu))
    return fmt::format("gpu_milli {} is outside 1..{}", gpu_milli, kGpuMilliPerGpu);
  return {};
}

}  // namespace gpupack
