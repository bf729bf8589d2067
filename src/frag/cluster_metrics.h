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
// - Pure; O(nodes x GPUs x probes + pods) plus F(n) per node (frag/fgd.h).
// - The repack bound: cluster_metrics() collects the bound pods' GPU items
//   (one item of the assignment's milli per GPU) and the GPUs in use; repack_bound()
//   then solves the fluid packing LP of the items (frag/packing_prices.h;
//   0.2 ms on a full openb cluster, at most about 10 ms for hundreds of
//   sizes) and
//   gives what no repack of the same pods gets past, counting GPU milli
//   alone: CPU, memory, GPU models and which GPUs a multi-GPU pod shares
//   only lower what a repack reaches. The items are left unset (and there is
//   no bound) where a pod's charge could depend on the GPU it lands on: a
//   GPU in time-slicing or MIG mode (charged less than the milli), a bound
//   pod taking advertised MIG devices, or items whose milli differs from
//   the GPUs' allocated milli. One pass over the bound pods (under serve's
//   lock; bench/RESULTS.md "The repack bound"), the LP apart.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
  int gpu_nodes = 0;        // nodes with GPUs or MIG devices (per_node or not)
  int64_t gpu_total = 0;    // their GPUs
  int64_t gpus_in_use = 0;  // GPUs with any milli allocated
  // The bound pods' GPU items, (per-GPU milli, GPUs), ascending; nullopt
  // where a pod's charge could depend on its GPU (see the contract).
  std::optional<std::vector<std::pair<int32_t, double>>> bound_gpu_items;

  // What a repack of the bound pods could win (repack_bound()).
  struct Repack {
    // Free GPU capacity, in GPUs, that the bound pods' sizes force however
    // they are packed: the LP's GPUs - their milli / 1000 (a lower bound).
    double size_waste_gpus = 0;
    // GPUs in use - the LP's GPUs: the most GPUs, beyond those free now,
    // that any repack of the bound pods leaves wholly free (an upper bound).
    // Both rounded to 1e-6 GPUs (the simplex's own rounding is about 1e-9).
    double freeable_gpus = 0;
  };
  std::optional<Repack> repack;  // set by the caller: m.repack = repack_bound(m)
};

ClusterMetrics cluster_metrics(const ClusterState& state, const TargetWorkload& target, std::span<const Request> probes,
                               bool per_node = true);

// The repack bound of `m`'s bound pods from their items and GPUs in use;
// nullopt when m.bound_gpu_items is. One LP; thread-safe.
std::optional<ClusterMetrics::Repack> repack_bound(const ClusterMetrics& m);
// The same from the LP's GPUs for m.bound_gpu_items, solved beforehand
// (fluid_packing_gpus, frag/packing_prices.h): the LP depends on the items
// alone, so a caller may keep it while they do not change. No LP.
ClusterMetrics::Repack repack_of(const ClusterMetrics& m, double fluid_gpus);

}  // namespace gpupack
