// GPU choice inside a node, shared by the policies.
//
// Contract: each choose_gpus_* function returns a mask of exactly
// req.gpu_count GPUs whose free milli >= req.gpu_milli, or 0 when the node has
// too few such GPUs (and for CPU-only requests). Pure, allocation-free,
// O(GPUs log GPUs) at most.
//
// choose_placement() is the full hardware-aware choice (every request kind,
// every GPU mode): it returns an Assignment that ClusterState::bind accepts,
// or the dimension that failed. Pure; O(NUMA nodes x GPUs x MIG starts x
// profiles), a few thousand operations on an 8-GPU MIG node; allocates only
// when a failure message is asked for. See docs/HARDWARE.md for the rules.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mig/mig_slot_choice.h"
#include "model/cluster_state.h"
#include "model/request.h"

namespace gpupack {

// "Best" rule: the GPUs with the least free milli that still fit, lowest index
// on ties (a whole-GPU request therefore takes the lowest-index free GPUs).
uint32_t choose_gpus_best_fit(std::span<const int32_t> gpu_free_milli, const Request& req);
// Lowest-index GPUs that fit.
uint32_t choose_gpus_first_fit(std::span<const int32_t> gpu_free_milli, const Request& req);
// The GPUs with the most free milli, lowest index on ties (spreading).
uint32_t choose_gpus_worst_fit(std::span<const int32_t> gpu_free_milli, const Request& req);

// How MIG instances are placed on MIG GPUs.
enum class MigSlotRule : uint8_t {
  kMigAware,   // GPU and start that block the fewest future profiles (default)
  kFirstFree,  // naive baseline: first GPU (and lowest start) where it fits
};

struct PlacementOptions {
  MigSlotRule mig_rule = MigSlotRule::kMigAware;
  // Expected MIG profile mix per GPU model id (index = GpuModelId); a
  // missing or empty entry means the default size-weighted mix.
  std::shared_ptr<const std::vector<MigTargetMix>> mig_mix = {};
};
// The mix of MIG profiles a workload asks for on `model` (each request
// resolved with mig_profile_for; weight = share of the requests).
MigTargetMix workload_mig_mix(const MigGeometry& geo, std::span<const Request> requests);

struct Placement {
  Assignment assignment;  // valid when failed == kNone
  Dimension failed = Dimension::kNone;
  bool ok() const { return failed == Dimension::kNone; }
};

// The best placement of `req` on `node` now: node CPU/memory/model, NUMA
// alignment, per-GPU mode and dimension checks, topology grouping, and MIG
// slot choice. Single-GPU candidates (GPU, and on MIG the start) are ranked,
// lowest first, by: the GPU is idle now (used GPUs first); the milli the
// GPU would be charged (a 3g instance before a whole exclusive GPU); the
// GPU's free milli (fullest first); the damage (MIG: weight of mix profiles
// newly unplaceable, 0..1000; other modes: the leftover if another request
// of this shape could not use it); MIG: weighted capacity lost, else the
// leftover; GPU index; start. kFirstFree replaces the MIG part by "lowest
// index GPU, lowest start" (idle and charge still first). Multi-GPU
// requests take the smallest NVLink domain (then PCIe switch) group that
// holds them, as their scope asks, best fit inside. `why` (optional)
// receives a message on failure.
Placement choose_placement(const ClusterState& state, NodeId node, const Request& req,
                           const PlacementOptions& options = {}, std::string* why = nullptr);

// GPUs in the node's largest group at `scope` (NVLink domain, PCIe switch,
// NUMA node); 0 when no GPU is in such a group; all GPUs for kAny. O(GPUs).
int largest_gpu_group(const ClusterState& state, NodeId node, GpuScope scope);

// The default MIG target mix of a geometry (size_weighted_mix), cached.
const MigTargetMix& default_mig_mix(const MigGeometry& geo);

// Number of GPUs with free milli >= milli.
inline int count_gpus_with_free(std::span<const int32_t> gpu_free_milli, int32_t milli) {
  int n = 0;
  for (int32_t f : gpu_free_milli) n += f >= milli;
  return n;
}

}  // namespace gpupack
