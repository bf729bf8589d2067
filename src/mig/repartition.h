// MIG repartition planner: new layouts for idle GPUs so that pending demand
// for MIG instances can be met, changing as few GPUs as possible.
//
// Contract: `plan_mig_repartition` is a pure function (thread-safe, no I/O).
// Input: the GPUs (node, index, model, current instances, which instances are
// in use) and the pending demand (instances wanted per profile name, per
// model). Only idle GPUs (no instance in use) may change; busy GPUs keep
// their layout exactly. Demand is first served by existing free instances
// (on any GPU of the model); then, greedily, the idle GPU and feasible layout
// that serve the most still-unmet instances are chosen (net of what the GPU's
// current instances served), until no change serves more; see docs/MIG.md.
// Among plans that change as many GPUs, one that keeps GPUs out of a MIG
// mode switch (whole GPU -> MIG) wins. Idle dynamic-layout GPUs serve demand
// first and at no cost: they are reported (on_demand), never changed, and
// left out of the config.
// A changed GPU gets only the instances it serves; its other slices stay
// unpartitioned. The plan carries a nvidia-mig-parted config with one named
// config per node that has a changed GPU (all of that node's fixed-layout
// GPUs listed, unchanged ones with their current counts) and the `nvidia.com/mig.config`
// label value per such node. Bad input (unknown or non-MIG model, invalid
// current layout, duplicate GPU, unknown profile) throws std::invalid_argument
// naming the GPU or profile. Cost per model: exact O(idle GPUs x states x
// useful layouts), states <= prod(demand_p + 1) x 2 and <= max_exact_states;
// greedy O(idle GPUs x distinct idle layouts x useful layouts).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mig/mig_layout.h"
#include "mig/mig_parted_config.h"

namespace gpupack {

inline constexpr const char* kMigConfigLabel = "nvidia.com/mig.config";

struct MigGpuInventory {
  std::string node;
  int gpu_index = 0;
  GpuModelId model = 0;
  bool mig_enabled = true;  // false: whole GPU, layout must be empty
  // Instances are created as pods arrive (no fixed layout): such a GPU is
  // never written to a mig-parted config (that would wipe its instances);
  // when idle it serves demand at no cost (MigGpuPlan::on_demand).
  bool dynamic_layout = false;
  std::vector<MigPlacement> layout;  // current GPU instances
  std::vector<bool> in_use;          // parallel to layout; empty = none in use

  bool idle() const;
};

// Pending demand: model -> profile name -> instances wanted.
using MigDemand = std::map<GpuModelId, MigProfileCounts>;

struct MigGpuPlan {
  std::string node;
  int gpu_index = 0;
  GpuModelId model = 0;
  bool changed = false;
  bool on_demand = false;  // a dynamic-layout GPU whose `after` instances are created as pods arrive
  bool mig_enabled_after = true;
  MigGpuState before;
  MigGpuState after;
};

struct MigRepartitionPlan {
  std::vector<MigGpuPlan> gpus;  // one per input GPU, input order
  std::string method;            // "exact", or "greedy" if some model's search was too large
  int changed_gpus = 0;
  MigDemand unmet_before;                          // demand not served by free instances now
  MigDemand unmet_after;                           // demand not served after the plan
  MigPartedConfig config;                          // configs for nodes with a change
  std::map<std::string, std::string> node_labels;  // node -> nvidia.com/mig.config value

  std::string config_yaml() const { return to_yaml(config); }
};

// `max_exact_states` bounds the exact search per model (states summed over
// GPUs); beyond it the greedy fallback plans that model.
MigRepartitionPlan plan_mig_repartition(const std::vector<MigGpuInventory>& gpus, const MigDemand& demand,
                                        size_t max_exact_states = 50000);

// What applying a mig-parted config does to the GPUs, as gpupack models it:
// each GPU of a node whose label names a config gets the counts of the first
// entry selecting it (by index and device-filter); a GPU whose counts already
// match keeps its instances, any other gets `find_placement`'s layout; GPUs
// of unlabelled nodes or not selected are untouched. Returns one state per
// GPU (input order). Throws std::invalid_argument when the YAML is invalid,
// a label names a missing config, or counts have no valid placement.
std::vector<MigGpuState> apply_mig_parted_config(const std::vector<MigGpuInventory>& gpus, std::string_view yaml,
                                                 const std::map<std::string, std::string>& node_labels);

}  // namespace gpupack
