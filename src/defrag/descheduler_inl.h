// Template body of policy_place() (defrag/descheduler.h).
#pragma once

#include <vector>

#include "sched/filter.h"

namespace gpupack {

template <class Allowed>
std::optional<Assignment> policy_place(const ClusterState& state, Policy& policy, std::span<const int64_t> node_rank,
                                       const Request& req, Allowed allowed) {
  struct Cand {
    NodeId node;
    int64_t score;
    uint32_t mask;
  };
  std::vector<Cand> cands;
  policy.prepare(state, req);
  for (int i = 0; i < state.node_count(); ++i) {
    const NodeId n{i};
    if (!allowed(n) || !fits(state, n, req)) continue;
    const NodeScore s = policy.score(state, n, req);
    cands.push_back({n, s.score, s.gpu_mask});
  }
  if (cands.empty()) return std::nullopt;
  if (policy.normalizes_scores()) {
    int64_t lo = cands[0].score, hi = cands[0].score;
    for (const Cand& c : cands) lo = std::min(lo, c.score), hi = std::max(hi, c.score);
    for (Cand& c : cands) c.score = hi == lo ? 0 : (c.score - lo) * 100 / (hi - lo);
  }
  auto rank = [&](NodeId n) { return node_rank.empty() ? static_cast<int64_t>(n) : node_rank[index(n)]; };
  const Cand* best = &cands[0];
  for (const Cand& c : cands)
    if (c.score > best->score || (c.score == best->score && rank(c.node) < rank(best->node))) best = &c;
  return Assignment{best->node, best->mask, req.is_gpu() ? req.gpu_milli : 0};
}

}  // namespace gpupack
