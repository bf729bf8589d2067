// A node as described by an input file, before it enters a ClusterState.
//
// Contract: plain value; units in names. All GPUs of a node are of one model.
#pragma once

#include <cstdint>
#include <string>

#include "model/gpu_catalog.h"

namespace gpupack {

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  GpuModelId gpu_model = 0;  // meaningless when gpu_count == 0
};

}  // namespace gpupack
