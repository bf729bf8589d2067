#include "policy/gpu_clustering.h"

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore GpuClusteringPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  if (!req.is_gpu()) return {0, 0};
  const int tag = shape_tag(req);
  const ShapeCounts& shapes = state.shape_counts(node);
  int same = 0, other = 0;
  for (int t = 0; t <= kMaxShapeTag; ++t) (t == tag ? same : other) += shapes[t];
  int64_t bonus = 0;
  if (same > 0 && other == 0)
    bonus = 75;
  else if (same > 0)
    bonus = 50;
  else if (other == 0)
    bonus = 25;
  const int64_t base = 25 * (8000 - state.gpu_free_total_milli(node)) / 8000;
  return {base + bonus, choose_gpus_best_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
