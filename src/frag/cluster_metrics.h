// Per-GPU, per-node and per-pool allocation, fragmentation and stranded
// capacity of a ClusterState: what `gpupack serve` exports on /metrics and
// `gpupack analyze` reports, computed in one place.
//
// Contract:
// - Reads only the state (the one ledger): allocated milli = 1000 - free per
//   GPU, allocated GPU memory = total - free (MiB; pods that state no GPU
//   memory take none), advertised MIG devices in use = total - free.
// - A GPU with free milli is stranded when no probe request could use it:
//   the node lacks the probe's CPU or memory, its model is not allowed, fewer
//   than gpu_count GPUs could take the probe (ClusterState::gpu_fit, which
//   also checks GPU memory), or this GPU could not. Probes are the requests
//   the caller expects (pending pods, else the target workload's classes).
// - Pools are per GPU model, in model id order. Nodes without GPUs and
//   without MIG devices are left out.
// - per_node = false leaves `gpus` and `nodes` empty (the totals and pools
//   are the same): a large cluster's per-GPU detail is too big to export.
// - Pure; O(nodes x GPUs x probes) plus F(n) per node (frag/fgd.h).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "frag/fgd.h"
#include "model/cluster_state.h"
#include "model/request.h"

namespace gpupack {

struct ClusterMetrics {
  struct Gpu {
    std::string node;
    int gpu = 0;
    std::string model;
    int32_t allocated_milli = 0;
    int64_t allocated_memory_mib = 0;
    int64_t memory_mib = 0;  // capacity; 0 = unknown
    int64_t stranded_memory_mib = 0;
    bool stranded = false;
  };
  struct Node {
    std::string name;
    std::string model;
    int64_t allocated_milli = 0;
    int64_t capacity_milli = 0;
    std::map<std::string, std::pair<int64_t, int64_t>> mig;  // profile -> (allocated, allocatable)
    double fragmentation_milli = 0;                          // F(n) against the target
  };
  struct Pool {
    std::string model;
    int64_t capacity_milli = 0;
    int64_t free_milli = 0;
    double fragmentation_milli = 0;
    int stranded_gpus = 0;
    int64_t stranded_memory_mib = 0;  // free memory of the stranded GPUs (those whose memory is known)
  };
  std::vector<Gpu> gpus;
  std::vector<Node> nodes;
  std::vector<Pool> pools;
  double cluster_fragmentation_milli = 0;
  int64_t cluster_free_milli = 0;
  int bound_pods = 0;
  int node_count = 0;
  int gpu_nodes = 0;      // nodes with GPUs or MIG devices (per_node or not)
  int64_t gpu_total = 0;  // their GPUs
};

ClusterMetrics cluster_metrics(const ClusterState& state, const TargetWorkload& target, std::span<const Request> probes,
                               bool per_node = true);

}  // namespace gpupack
