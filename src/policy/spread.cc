#include "policy/spread.h"

#include "policy/gpu_choice.h"

namespace gpupack {
namespace {

double free_share(int64_t free, int64_t request, int64_t total) {
  return total > 0 ? static_cast<double>(free - request) / static_cast<double>(total) : 0.0;
}

}  // namespace

NodeScore SpreadPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  double sum = free_share(state.cpu_free_milli(node), req.cpu_milli, state.cpu_total_milli(node)) +
               free_share(state.memory_free_mib(node), req.memory_mib, state.memory_total_mib(node));
  int resources = 2;
  if (state.gpu_count(node) > 0) {
    sum += free_share(state.gpu_free_total_milli(node), req.total_gpu_milli(),
                      int64_t{state.gpu_count(node)} * kGpuMilliPerGpu);
    ++resources;
  }
  return {static_cast<int64_t>(100.0 * sum / resources), choose_gpus_worst_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
