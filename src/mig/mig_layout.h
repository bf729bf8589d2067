// MIG layouts: a whole GPU's set of instances, given either as placements
// (profile, start) or as counts per profile (as mig-parted configs give them).
//
// Contract: pure functions over the immutable geometry tables; thread-safe.
// Every refusal carries a reason naming the profile and the rule broken
// (unknown profile, start, overlap, compute budget, max instances, "+me").
// `find_placement` searches exhaustively (instances largest first, starts
// ascending, identical instances in ascending starts, pruned by free slices):
// at most 7 instances, so at most a few thousand nodes. It is deterministic.
// `feasible_layouts` lists every count vector that has a placement (cached
// per model; a few hundred entries for the 8-slice family).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mig/mig_slots.h"

namespace gpupack {

// Instances per profile name, as in a mig-parted `mig-devices` map.
using MigProfileCounts = std::map<std::string, int>;
// Instances per profile index of a geometry.
using MigCountVector = std::array<uint8_t, kMaxMigProfiles>;

struct MigLayoutResult {
  std::optional<MigGpuState> state;  // set when the layout is valid
  std::string reason;                // why not, when it is not
  bool ok() const { return state.has_value(); }
};

// Places the instances in order; refuses with the first rule broken.
MigLayoutResult build_layout(const MigGeometry& geo, const std::vector<MigPlacement>& placements);
// Same with profile names: {("3g.20gb", 4), ("4g.20gb", 0)}.
MigLayoutResult build_layout(const MigGeometry& geo, const std::vector<std::pair<std::string, int>>& named_placements);

// A valid placement for the given counts, or the reason none exists.
MigLayoutResult find_placement(const MigGeometry& geo, const MigProfileCounts& counts);
MigLayoutResult find_placement(const MigGeometry& geo, const MigCountVector& counts);

// Every count vector (instances per profile) that has a valid placement,
// including the empty one; ordered by the vectors' lexicographic order.
const std::vector<MigCountVector>& feasible_layouts(const MigGeometry& geo);

MigCountVector count_vector(const MigGpuState& gpu);
// Profile name -> count, profiles with no instance left out.
MigProfileCounts counts_by_name(const MigGeometry& geo, const MigCountVector& counts);
MigProfileCounts counts_by_name(const MigGpuState& gpu);
// Converts names to a count vector; throws std::invalid_argument naming an
// unknown profile or a negative count.
MigCountVector count_vector(const MigGeometry& geo, const MigProfileCounts& counts);
// "3g.20gb@0 2g.10gb@4 1g.5gb@6" (ascending start); "(empty)" when none.
std::string format_layout(const MigGpuState& gpu);

}  // namespace gpupack
