#include "policy/best_fit.h"

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore BestFitPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  const double cpu_left = static_cast<double>(state.cpu_free_milli(node) - req.cpu_milli);
  const double gpu_left = static_cast<double>(state.gpu_free_total_milli(node) - req.total_gpu_milli());
  const double used = 0.5 * cpu_left / 128000.0 + 0.5 * gpu_left / 8000.0;
  return {static_cast<int64_t>(100.0 * (1.0 - used)), choose_gpus_best_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
