// Filter: can a node host a request right now?
//
// Contract: fits() is the hot-path check (no allocation, O(GPUs)): free CPU
// >= request, free host memory >= request, for GPU requests the node's model
// is allowed and at least gpu_count GPUs each have free milli >= gpu_milli.
// explain() performs the same checks and names the first failed dimension,
// as Unschedulable (may fit later) or UnschedulableAndUnresolvable (never on
// this node: model not allowed, the empty node could not host it, too few
// GPUs with the memory asked for, too few advertised MIG devices, no GPU
// group as large as a required scope).
// Hardware: a request that is not plain, or any request on a node with a
// hardware setup, is checked by choose_placement() (every mode, MIG slots,
// NUMA, topology); its failure names the dimension (gpu_memory, mig_slot,
// sharing_mode, mps_clients, gpu_bandwidth, gpu_l2, numa, topology, ...).
#pragma once

#include "model/cluster_state.h"
#include "model/status.h"
#include "policy/gpu_choice.h"

namespace gpupack {

// The openb check alone (plain request, node without hardware setup).
inline bool fits_plain(const ClusterState& s, NodeId n, const Request& r) {
  if (s.cpu_free_milli(n) < r.cpu_milli || s.memory_free_mib(n) < r.memory_mib) return false;
  if (r.gpu_count == 0) return true;
  if (!model_allowed(r.allowed_models, s.gpu_model(n)) || s.gpu_count(n) < r.gpu_count) return false;
  return count_gpus_with_free(s.gpu_free_milli(n), r.gpu_milli) >= r.gpu_count;
}

// The openb checks against the node's totals: could the node, emptied, host
// a plain request? (CPU, memory, GPU model and GPU count.)
inline bool fits_empty_plain(const ClusterState& s, NodeId n, const Request& r) {
  if (s.cpu_total_milli(n) < r.cpu_milli || s.memory_total_mib(n) < r.memory_mib) return false;
  return r.gpu_count == 0 || (model_allowed(r.allowed_models, s.gpu_model(n)) && s.gpu_count(n) >= r.gpu_count);
}

inline bool fits(const ClusterState& s, NodeId n, const Request& r) {
  if (!r.is_plain() || s.has_hardware_setup(n)) return choose_placement(s, n, r).ok();
  return fits_plain(s, n, r);
}

// The first failed dimension (kNone when it fits); cheap, no message.
// `unresolvable` is set when the node could never host the request.
Dimension failed_dimension(const ClusterState& s, NodeId n, const Request& r, bool* unresolvable = nullptr);

Status explain_fit(const ClusterState& s, NodeId n, const Request& r);

}  // namespace gpupack
