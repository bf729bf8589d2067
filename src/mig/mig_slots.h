// Free-slot model of one MIG GPU: which memory slices hold a GPU instance.
//
// Contract: `MigGpuState` is a small value (about 24 bytes, no heap) bound to
// one immutable MigGeometry (not owned; the tables live for the process). It
// holds a bitmask of occupied memory slices, the compute slices used, the
// instance count per profile and, per start slice, the profile that starts
// there. Rules checked on every placement (driver R510+ semantics, so 4g at 0
// plus 3g at 4 is allowed): the start is one of the profile's placements, the
// slices are free, the compute budget (7; A30: 4) is not exceeded, the
// profile's max instances is respected, and at most one "+me" instance
// exists. `why_not`, `place` and `remove` return an empty string on success,
// else the reason; a failed `place`/`remove` changes nothing. All operations
// are O(1) except `instances()` (O(slices)). Not thread-safe for writes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mig/mig_geometry.h"

namespace gpupack {

// One GPU instance: a profile (index into the model's geometry) at a start
// memory slice.
struct MigPlacement {
  int profile = 0;
  int start = 0;
  friend bool operator==(const MigPlacement&, const MigPlacement&) = default;
};

class MigGpuState {
 public:
  explicit MigGpuState(const MigGeometry& geo) : geo_(&geo) { at_start_.fill(kNone); }

  const MigGeometry& geometry() const { return *geo_; }

  // Empty string if `profile` may be placed at `start` now, else why not.
  std::string why_not(int profile, int start) const;
  bool can_place(int profile, int start) const { return why_not(profile, start).empty(); }
  // Empty string if some instance of `profile` may be added (any start).
  std::string why_not_anywhere(int profile) const;
  bool can_place_anywhere(int profile) const { return valid_starts(profile) != 0; }
  // Bit s set = `profile` may be placed at start s now.
  uint8_t valid_starts(int profile) const;
  std::vector<int> valid_start_list(int profile) const;

  std::string place(int profile, int start);
  // Removes the instance of `profile` that starts at `start`.
  std::string remove(int profile, int start);

  uint8_t occupied_mask() const { return occupied_; }
  uint8_t free_mask() const;
  int free_memory_slices() const;
  int compute_used() const { return compute_used_; }
  int compute_free() const { return geo_->compute_slices - compute_used_; }
  int count(int profile) const { return counts_.at(static_cast<size_t>(profile)); }
  int instance_count() const;
  bool media_extension_used() const { return me_used_ != 0; }
  bool empty() const { return occupied_ == 0; }
  // Instances ordered by start slice.
  std::vector<MigPlacement> instances() const;

  friend bool operator==(const MigGpuState& a, const MigGpuState& b) {
    return a.geo_ == b.geo_ && a.occupied_ == b.occupied_ && a.at_start_ == b.at_start_;
  }

 private:
  static constexpr int8_t kNone = -1;
  std::string check_profile(int profile) const;
  // Instance count, +me and compute-budget refusals (placement-independent).
  std::string budget_refusal(const MigProfile& p, int profile) const;

  const MigGeometry* geo_;
  uint8_t occupied_ = 0;      // bit s = memory slice s holds an instance
  uint8_t compute_used_ = 0;  // sum of g over instances
  uint8_t me_used_ = 0;       // number of "+me" instances (0 or 1)
  std::array<uint8_t, kMaxMigProfiles> counts_{};
  std::array<int8_t, kMaxMigMemorySlices> at_start_{};  // profile starting at slice s
};

}  // namespace gpupack
