// nvidia-mig-parted configuration files (schema `version: v1`): the one
// definition of the schema's value types, its writer and its validator.
//
// Contract: plain values and pure functions; thread-safe.
// - `to_yaml` checks the value first and throws std::invalid_argument naming
//   the config and field (no configs, empty name, an entry without devices,
//   a bad profile name or count, mig-devices on a disabled entry, a layout
//   no GPU can hold, a malformed PCI id); otherwise it returns YAML that
//   `validate_mig_parted_config` accepts and `parse_mig_parted_config` reads
//   back to an equal value. PCI ids are written quoted (a plain 0x... is an
//   integer to mig-parted's YAML 1.1 loader).
// - `validate_mig_parted_config` checks the v1 schema rules (see docs/MIG.md)
//   and returns every error found, each naming the YAML path and, for text,
//   the line; an empty result means valid. `parse_mig_parted_config`
//   validates and throws std::invalid_argument listing the errors.
// - Profile names are checked for format; a `mig-devices` map is checked
//   against the limits every MIG GPU shares (at most 7 instances, at most 7
//   compute slices), not against one GPU model: `check_mig_devices` with a
//   geometry does that (placement rules of mig_layout.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "mig/mig_geometry.h"
#include "mig/mig_layout.h"

namespace gpupack {

struct MigPartedEntry {
  std::vector<std::string> device_filter;   // PCI ids such as "0x233010DE"; empty = any device
  std::optional<std::vector<int>> devices;  // GPU indices; nullopt = "all"
  bool mig_enabled = false;
  MigProfileCounts mig_devices;  // profile -> count per GPU (enabled only)

  // Does this entry select GPU `index` whose board has one of `pci_ids`?
  bool selects(int index, const std::vector<std::string>& pci_ids) const;
  friend bool operator==(const MigPartedEntry&, const MigPartedEntry&) = default;
};

struct MigPartedConfig {
  std::map<std::string, std::vector<MigPartedEntry>> configs;  // name -> entries
  friend bool operator==(const MigPartedConfig&, const MigPartedConfig&) = default;
};

// Limits shared by every MIG-capable GPU: instances per GPU and compute
// slices per GPU (A30 has 4; every other model 7).
inline constexpr int kMaxMigInstancesPerGpu = 7;
inline constexpr int kMaxMigComputeSlices = 7;

std::string to_yaml(const MigPartedConfig& config);
std::vector<std::string> validate_mig_parted_config(std::string_view yaml);
// Same rules on a document already parsed (line numbers when it has marks).
std::vector<std::string> validate_mig_parted_config(const YAML::Node& doc);
MigPartedConfig parse_mig_parted_config(std::string_view yaml);

// True for "1g.5gb", "1c.3g.20gb", "1g.5gb+me", "1g.10gb+me.all", "1g.5gb-me",
// "1g.24gb+gfx" (mig-parted's profile format); sizes are positive integers
// without leading zeros.
bool valid_mig_profile_format(std::string_view profile);

// "1g.10gb=2,3g.40gb=1" -> {"1g.10gb":2, "3g.40gb":1}. Throws
// std::invalid_argument quoting the text: not <profile>=<count>, a bad
// profile name, a count outside 0..99, a profile given twice.
MigProfileCounts parse_profile_counts(std::string_view text);

// Why one GPU cannot hold `counts`, or "" when it can. Without a geometry:
// more than 7 instances, or more than 7 compute slices (a "Cc.Gg" profile
// counts C, a plain "Gg" profile G). With one: every profile must be one of
// the model's and `find_placement` must find a placement.
std::string check_mig_devices(const MigProfileCounts& counts, const MigGeometry* geo = nullptr);

}  // namespace gpupack
