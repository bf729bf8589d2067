// GpuClustering: keep pods of one GPU shape together (shared pods with shared
// pods, k-GPU pods with k-GPU pods), and prefer fuller nodes.
// base = 25 x (8000 - free GPU milli) / 8000 (integer), plus 75 if the node
// runs only GPU pods of the pod's shape, 50 if that shape and others, 25 if
// no GPU pods, 0 if only other shapes. CPU-only pods score 0. GPUs inside:
// the "best" rule.
#pragma once

#include "policy/policy.h"

namespace gpupack {

class GpuClusteringPolicy final : public Policy {
 public:
  std::string_view name() const override { return "gpuclustering"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
};

}  // namespace gpupack
