// GPU choice inside a node, shared by the policies.
//
// Contract: each function returns a mask of exactly req.gpu_count GPUs whose
// free milli >= req.gpu_milli, or 0 when the node has too few such GPUs (and
// for CPU-only requests). Pure, allocation-free, O(GPUs log GPUs) at most.
#pragma once

#include <cstdint>
#include <span>

#include "model/request.h"

namespace gpupack {

// "Best" rule: the GPUs with the least free milli that still fit, lowest index
// on ties (a whole-GPU request therefore takes the lowest-index free GPUs).
uint32_t choose_gpus_best_fit(std::span<const int32_t> gpu_free_milli, const Request& req);
// Lowest-index GPUs that fit.
uint32_t choose_gpus_first_fit(std::span<const int32_t> gpu_free_milli, const Request& req);
// The GPUs with the most free milli, lowest index on ties (spreading).
uint32_t choose_gpus_worst_fit(std::span<const int32_t> gpu_free_milli, const Request& req);

// Number of GPUs with free milli >= milli.
inline int count_gpus_with_free(std::span<const int32_t> gpu_free_milli, int32_t milli) {
  int n = 0;
  for (int32_t f : gpu_free_milli) n += f >= milli;
  return n;
}

}  // namespace gpupack
