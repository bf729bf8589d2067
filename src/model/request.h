// What a pod asks for, and where it was put.
//
// Contract: `Request` is a plain value in the units its field names say.
// `gpu_milli` is the share of each requested GPU (1000 = a whole GPU); a
// request with gpu_count 0 is CPU-only and has gpu_milli 0. `validate()`
// returns an empty string for a well-formed request, else what is wrong.
// `Assignment` names a node and the GPUs on it (bit i = the node's GPU i),
// each charged `gpu_milli`.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "model/gpu_catalog.h"
#include "model/ids.h"

namespace gpupack {

constexpr int32_t kGpuMilliPerGpu = 1000;
constexpr int kMaxGpusPerNode = 32;  // GPU sets are 32-bit masks

struct Request {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  int32_t gpu_milli = 0;           // per GPU; 1000 for whole GPUs
  ModelMask allowed_models = 0;    // 0 = any GPU model

  bool is_gpu() const { return gpu_count > 0; }
  bool is_shared() const { return gpu_count > 0 && gpu_milli < kGpuMilliPerGpu; }
  int64_t total_gpu_milli() const { return int64_t{gpu_count} * gpu_milli; }
  std::string validate() const;

  friend bool operator==(const Request&, const Request&) = default;
};

struct Assignment {
  NodeId node = kNoNode;
  uint32_t gpu_mask = 0;  // GPUs of the node used, bit i = GPU i
  int32_t gpu_milli = 0;  // charged on each GPU in gpu_mask

  int gpu_count() const { return std::popcount(gpu_mask); }
  friend bool operator==(const Assignment&, const Assignment&) = default;
};

}  // namespace gpupack
