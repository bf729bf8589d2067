// BestFit: prefer the node left with the least free CPU and GPU.
//
// Assumes the paper's normalisation constants (a node of 128 CPUs and 8 GPUs).
// raw = trunc(100 x (1 - [0.5 (cpu_free - cpu_req)/128000
//                         + 0.5 (gpu_free_total - gpu_req_total)/8000]));
// the scheduler then min-max normalises raw scores over feasible nodes.
// GPUs inside the node: the "best" rule (policy/gpu_choice.h).
#pragma once

#include "policy/policy.h"

namespace gpupack {

class BestFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "bestfit"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
  bool normalizes_scores() const override { return true; }
};

}  // namespace gpupack
