// DotProd: prefer the node whose free resources point least in the pod's
// direction (Tetris-style alignment), with the paper's normalisation
// constants: node [cpu_free/128000, gpu_free_total/8000], pod [cpu_req/128000,
// gpu_req_total/8000], score = trunc(100 x (1 - dot/2)). No normalisation.
// GPUs inside the node: the "best" rule.
#pragma once

#include "policy/policy.h"

namespace gpupack {

class DotProductPolicy final : public Policy {
 public:
  std::string_view name() const override { return "dotprod"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
};

}  // namespace gpupack
