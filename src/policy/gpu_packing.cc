#include "policy/gpu_packing.h"

#include <algorithm>

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore GpuPackingPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  if (!req.is_gpu()) return {0, 0};
  const auto free = state.gpu_free_milli(node);
  const uint32_t mask = choose_gpus_best_fit(free, req);
  const int free_gpus = count_gpus_with_free(free, kGpuMilliPerGpu);
  if (free_gpus == static_cast<int>(free.size())) return {std::max(33 - free_gpus, free_gpus), mask};
  int used_free_gpus = 0;
  int64_t used_free_milli = 0;
  for (int g = 0; g < static_cast<int>(free.size()); ++g) {
    if (!((mask >> g) & 1u)) continue;
    used_free_gpus += free[g] == kGpuMilliPerGpu;
    used_free_milli += free[g];
  }
  if (used_free_gpus > 0) return {std::max(50 - used_free_gpus, 33), mask};
  return {std::max<int64_t>(100 - (used_free_milli * 100 / 1000) / 10, 50), mask};
}

}  // namespace gpupack
