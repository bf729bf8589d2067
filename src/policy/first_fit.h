// FirstFit: the first feasible node in rank order, its lowest-index fitting
// GPUs. Every node scores 0, so the scheduler's rank tie-break decides.
#pragma once

#include "policy/policy.h"

namespace gpupack {

class FirstFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "firstfit"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
};

}  // namespace gpupack
