// nvidia-mig-parted configuration files (schema `version: v1`).
//
// Contract: plain values and pure functions; thread-safe. `to_yaml` emits a
// document that `validate_mig_parted_config` accepts whenever the value
// itself is valid (non-empty configs, well-formed profile names).
// `validate_mig_parted_config` checks the v1 schema rules (see docs/MIG.md)
// and returns every error found, each naming the YAML path and line; an
// empty result means valid. `parse_mig_parted_config` validates and throws
// std::invalid_argument listing the errors. Profile names are checked for
// format only, not against a GPU model (that is `find_placement`'s job).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mig/mig_layout.h"

namespace gpupack {

struct MigPartedEntry {
  std::vector<std::string> device_filter;  // PCI ids; empty = any device
  std::optional<std::vector<int>> devices;  // GPU indices; nullopt = "all"
  bool mig_enabled = false;
  MigProfileCounts mig_devices;            // profile -> count (enabled only)

  // Does this entry select GPU `index` whose board has one of `pci_ids`?
  bool selects(int index, const std::vector<std::string>& pci_ids) const;
  friend bool operator==(const MigPartedEntry&, const MigPartedEntry&) = default;
};

struct MigPartedConfig {
  std::map<std::string, std::vector<MigPartedEntry>> configs;  // name -> entries
  friend bool operator==(const MigPartedConfig&, const MigPartedConfig&) = default;
};

std::string to_yaml(const MigPartedConfig& config);
std::vector<std::string> validate_mig_parted_config(std::string_view yaml);
MigPartedConfig parse_mig_parted_config(std::string_view yaml);

// True for "1g.5gb", "1c.3g.20gb", "1g.5gb+me", "1g.10gb+me.all", "1g.5gb-me",
// "1g.24gb+gfx" (mig-parted's profile format).
bool valid_mig_profile_format(std::string_view profile);

}  // namespace gpupack
