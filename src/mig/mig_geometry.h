// MIG geometry: the GPU-instance profiles of each MIG-capable GPU model.
//
// Contract: the tables are built once, immutable and process-wide (safe to
// read from any thread). A model's profiles are indexed 0..size()-1 in a
// fixed order (smallest first); that index is what MigGpuState stores.
// Placements are in memory slices: a profile of `memory_slices` slices may
// start only at the slices set in `start_mask` (bit s = start s). Memory is in
// MiB as NVML reports it for the instance. Entries with `inferred` set are not
// confirmed by hardware output (see docs/MIG.md). Lookups are O(profiles).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_catalog.h"

namespace gpupack {

constexpr int kMaxMigProfiles = 8;      // profiles per model (MigGpuState arrays)
constexpr int kMaxMigMemorySlices = 8;  // memory slices per GPU (one byte of bits)

struct MigProfile {
  std::string name;         // device-plugin spelling, e.g. "1g.10gb", "1g.5gb+me"
  int nvml_profile_id = 0;  // the "Profile ID" of `nvidia-smi mig -lgip`
  int compute_slices = 0;   // the "g" of the name
  int memory_slices = 0;    // placement size
  int sm_count = 0;
  int64_t memory_mib = 0;
  int max_instances = 0;         // per GPU
  uint8_t start_mask = 0;        // bit s set = may start at memory slice s
  bool media_extension = false;  // a "+me" profile (at most one per GPU)
  bool inferred = false;         // some figure not confirmed on hardware

  // Extended resource of the device plugin's "mixed" strategy:
  // "nvidia.com/mig-" + name with '+' replaced by '.'.
  std::string resource_name() const;
  // Name inside a config name ("all-1g.5gb.me"): '+' replaced by '.'.
  std::string config_token() const;
  std::vector<int> starts() const;
  // Memory slices covered when placed at `start` (bit s = slice s).
  uint8_t slice_bits(int start) const { return static_cast<uint8_t>(((1u << memory_slices) - 1u) << start); }
};

struct MigGeometry {
  GpuModelId model = 0;
  std::string model_name;  // catalog name, e.g. "A100-40GB"
  int memory_slices = 0;   // 8 (A100/H100/H200) or 4 (A30)
  int compute_slices = 0;  // 7 or 4: the compute budget of a GPU
  bool inferred = false;   // the whole table is inferred (H200)
  // PCI device+vendor ids of the boards of this model, as mig-parted's
  // `device-filter` spells them ("0x20B010DE").
  std::vector<std::string> pci_device_ids;
  std::vector<MigProfile> profiles;

  int size() const { return static_cast<int>(profiles.size()); }
  const MigProfile& profile(int index) const { return profiles.at(static_cast<size_t>(index)); }
  // Index of a profile by its name ("1g.10gb"), its config token
  // ("1g.10gb.me") or its resource name ("nvidia.com/mig-1g.10gb"); exact
  // match, ASCII case ignored.
  std::optional<int> find(std::string_view name) const;
  // Comma-separated names, for error messages.
  std::string profile_names() const;
};

// The geometry of a catalog model, or nullptr if the model has no MIG table.
const MigGeometry* mig_geometry(GpuModelId model);
// Same, by catalog name or alias; nullptr if unknown or not MIG-capable.
const MigGeometry* mig_geometry(std::string_view model_name);
// All MIG tables, in catalog order.
const std::vector<MigGeometry>& all_mig_geometries();

// Smallest profile with at least `memory_mib` MiB and `sm_count` SMs:
// fewest memory slices, then fewest compute slices, then plain before "+me"
// (media-extension profiles are considered only when `allow_media_extension`).
// nullopt when no profile is large enough.
std::optional<int> smallest_profile_for(const MigGeometry& geo, int64_t memory_mib, int sm_count,
                                        bool allow_media_extension = false);

}  // namespace gpupack
