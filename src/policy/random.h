// Random: a uniformly random feasible node (seeded, reproducible).
// Each feasible node gets an independent random score; the highest wins, so
// every feasible node is equally likely. GPUs inside: the "best" rule.
#pragma once

#include <random>

#include "policy/policy.h"

namespace gpupack {

class RandomPolicy final : public Policy {
 public:
  explicit RandomPolicy(uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "random"; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool scores_by_state() const override { return false; }  // one draw per node

 private:
  std::mt19937_64 rng_;
};

}  // namespace gpupack
