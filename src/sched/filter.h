// Filter: can a node host a request right now?
//
// Contract: fits() is the hot-path check (no allocation, O(GPUs)): free CPU
// >= request, free host memory >= request, for GPU requests the node's model
// is allowed and at least gpu_count GPUs each have free milli >= gpu_milli.
// explain() performs the same checks and names the first failed dimension,
// as Unschedulable (may fit later) or UnschedulableAndUnresolvable (never on
// this node: model not allowed, or the empty node could not host it).
#pragma once

#include "model/cluster_state.h"
#include "model/status.h"
#include "policy/gpu_choice.h"

namespace gpupack {

inline bool fits(const ClusterState& s, NodeId n, const Request& r) {
  if (s.cpu_free_milli(n) < r.cpu_milli || s.memory_free_mib(n) < r.memory_mib) return false;
  if (r.gpu_count == 0) return true;
  if (!model_allowed(r.allowed_models, s.gpu_model(n)) || s.gpu_count(n) < r.gpu_count) return false;
  return count_gpus_with_free(s.gpu_free_milli(n), r.gpu_milli) >= r.gpu_count;
}

// The first failed dimension (kNone when it fits); cheap, no message.
// `unresolvable` is set when the node could never host the request.
Dimension failed_dimension(const ClusterState& s, NodeId n, const Request& r, bool* unresolvable = nullptr);

Status explain_fit(const ClusterState& s, NodeId n, const Request& r);

}  // namespace gpupack
