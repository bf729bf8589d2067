// Spread (Kubernetes' LeastAllocated): prefer the node with the most free
// capacity left after placing the pod, averaged over CPU, host memory and GPU
// (GPU omitted on nodes without GPUs):
//   score = mean over resources of (free after / total) x 100, truncated.
// GPUs inside: the GPUs with the most free milli (worst fit), so shared pods
// spread over GPUs too.
#pragma once

#include "policy/policy.h"

namespace gpupack {

class SpreadPolicy final : public Policy {
 public:
  std::string_view name() const override { return "spread"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
};

}  // namespace gpupack
