// Small clusters and requests shared by the gang / queue / backfill /
// preemption tests.
#pragma once

#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/gpu_catalog.h"

namespace gpupack::testing {

inline GpuModelId model(const char* name) { return *GpuCatalog::builtin().find(name); }

// `count` nodes named n0.. of `gpus` GPUs each (V100M32), 64 cores, 512 GiB.
inline std::vector<NodeSpec> uniform_nodes(int count, int gpus, const char* gpu_model = "V100M32") {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < count; ++i) nodes.push_back({"n" + std::to_string(i), 64000, 524288, gpus, model(gpu_model)});
  return nodes;
}

inline Request gpus(int count, int64_t cpu_milli = 1000) { return {cpu_milli, 1024, count, 1000, 0}; }

// Pods bound per job, for all-or-nothing checks.
inline int bound_count(const ClusterState& s, int first_pod, int pods) {
  int n = 0;
  for (int i = 0; i < pods; ++i) n += s.is_bound(PodId{first_pod + i});
  return n;
}

}  // namespace gpupack::testing
