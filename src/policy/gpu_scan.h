// The GPU choices a fragmentation-scoring policy (fgd, capfrag) compares on
// one node, and the best of them by the policy's own score.
//
// Contract: best_gpus_by_score() tries a 1-GPU share on each GPU it fits,
// one GPU per distinct free value (GPUs with equal free milli score the
// same), and anything else (whole GPUs, multi-GPU shares) on the first-fit
// GPUs (choose_gpus_first_fit). `score_after(after)` gets the node's free
// milli per GPU with the pod placed (a span valid only during the call) and
// returns a score, higher better; the earliest choice wins ties. Returns
// {floor, 0} when a share fits no GPU. Allocation-free; O(GPUs^2) score-free
// work plus one call of score_after per distinct choice.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "policy/gpu_choice.h"
#include "policy/policy.h"

namespace gpupack {

template <class ScoreAfter>
NodeScore best_gpus_by_score(std::span<const int32_t> gpu_free_milli, const Request& req, int64_t floor,
                             ScoreAfter&& score_after) {
  std::array<int32_t, kMaxGpusPerNode> after{};
  std::copy(gpu_free_milli.begin(), gpu_free_milli.end(), after.begin());
  const std::span<const int32_t> after_span(after.data(), gpu_free_milli.size());
  NodeScore best{floor, 0};
  if (req.is_shared() && req.gpu_count == 1) {
    for (size_t g = 0; g < gpu_free_milli.size(); ++g) {
      if (gpu_free_milli[g] < req.gpu_milli) continue;
      bool seen = false;  // an earlier GPU with the same free value scores the same
      for (size_t h = 0; h < g && !seen; ++h) seen = gpu_free_milli[h] == gpu_free_milli[g];
      if (seen) continue;
      after[g] -= req.gpu_milli;
      const int64_t s = score_after(after_span);
      after[g] += req.gpu_milli;
      if (s > best.score) best = {s, 1u << g};
    }
    return best;
  }
  const uint32_t mask = choose_gpus_first_fit(gpu_free_milli, req);
  for (size_t g = 0; g < gpu_free_milli.size(); ++g)
    if ((mask >> g) & 1u) after[g] -= req.gpu_milli;
  return {score_after(after_span), mask};
}

}  // namespace gpupack
