// GpuPacking: fill partly used GPUs first, then partly used nodes, and open a
// fully free node last (the FGD paper's packing baseline).
//   node fully free:            max(33 - free GPUs, free GPUs)
//   pod would use a free GPU:   max(50 - fully free GPUs it uses, 33)
//   pod fits on used GPUs only: max(100 - (free milli of those GPUs x 100 / 1000) / 10, 50)
// Integer arithmetic; CPU-only pods score 0. GPUs inside: the "best" rule.
#pragma once

#include "policy/policy.h"

namespace gpupack {

class GpuPackingPolicy final : public Policy {
 public:
  std::string_view name() const override { return "gpupacking"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }  // no state
};

}  // namespace gpupack
