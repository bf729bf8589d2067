#include "policy/first_fit.h"

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore FirstFitPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  return {0, choose_gpus_first_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
