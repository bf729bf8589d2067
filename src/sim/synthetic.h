// Built-in synthetic cluster and workload, modelled on the openb trace, so
// that `gpupack simulate` (and `make demo`) runs without any input file.
//
// Contract: deterministic in (options). The node-type mix, the pod-shape mix
// and the per-shape CPU / GPU-share distributions are tables in synthetic.cc,
// documented in docs/SYNTHETIC.md with the openb figures they follow. Pods
// are generated until their total GPU request reaches `gpu_request_ratio` x
// cluster capacity (openb default: 0.98). O(nodes + pods).
#pragma once

#include <cstdint>
#include <vector>

#include "model/node.h"
#include "model/workload.h"

namespace gpupack {

struct SyntheticOptions {
  int node_count = 1000;
  double gpu_request_ratio = 0.98;
  uint64_t seed = 2023;
};

std::vector<NodeSpec> synthetic_nodes(const SyntheticOptions& options);
Workload synthetic_workload(const SyntheticOptions& options, int64_t capacity_milli);

}  // namespace gpupack
