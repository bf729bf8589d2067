#include "policy/random.h"

#include "policy/gpu_choice.h"

namespace gpupack {

NodeScore RandomPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  // 62 random bits: non-negative, and ties (probability 2^-62) go to rank.
  return {static_cast<int64_t>(rng_() >> 2), choose_gpus_best_fit(state.gpu_free_milli(node), req)};
}

}  // namespace gpupack
