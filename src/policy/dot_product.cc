#include "policy/dot_product.h"

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore DotProductPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  if (state.cpu_free_milli(node) < req.cpu_milli) return {0, 0};
  const double node_cpu = static_cast<double>(state.cpu_free_milli(node)) / 128000.0;
  const double node_gpu = static_cast<double>(state.gpu_free_total_milli(node)) / 8000.0;
  const double pod_cpu = static_cast<double>(req.cpu_milli) / 128000.0;
  const double pod_gpu = static_cast<double>(req.total_gpu_milli()) / 8000.0;
  const double dot = node_cpu * pod_cpu + node_gpu * pod_gpu;
  return {static_cast<int64_t>(100.0 * (1.0 - dot / 2.0)), choose_gpus_best_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
