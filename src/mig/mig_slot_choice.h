// Choosing where a MIG instance starts, and how fragmented a MIG GPU is.
//
// Contract: pure functions of a MigGpuState (never modified) and a target
// mix: a weight per profile of the state's geometry (index = profile index;
// weights are non-negative and need not sum to 1, they are normalised where a
// measure asks for it). Cost: O(starts x profiles x slices), a few hundred
// operations; no allocation except the returned vectors. Thread-safe.
//
// - first_free_start: the naive baseline, the lowest valid start.
// - mig_aware_start: among valid starts, the one after which the smallest
//   total weight of profiles can no longer be placed at all; ties broken by
//   the largest remaining weighted capacity (sum over profiles of weight x
//   instances still placeable), then by the lowest start.
// - mig_fragmentation_milli: FGD-style expected stranded capacity of one GPU
//   in milli-GPUs (0..1000), defined in docs/MIG.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mig/mig_slots.h"

namespace gpupack {

struct MigTargetMix {
  std::vector<double> weight;  // one per profile of the geometry
};

// Weight = memory slices of the profile; "+me" profiles weigh 0.
MigTargetMix size_weighted_mix(const MigGeometry& geo);
// Weights by profile name (e.g. {"1g.10gb": 0.6, "3g.40gb": 0.4}); names not
// given weigh 0. Throws std::invalid_argument naming an unknown profile or a
// negative weight.
MigTargetMix mix_from_names(const MigGeometry& geo, const std::map<std::string, double>& weights);

// Lowest start at which `profile` may be placed now; nullopt if none.
std::optional<int> first_free_start(const MigGpuState& gpu, int profile);

struct MigStartScore {
  int start = 0;
  double blocked_weight = 0;   // weight of profiles that no longer fit anywhere
  double capacity_weight = 0;  // sum of weight x instances still placeable
};
// Score of every valid start of `profile`, ascending start.
std::vector<MigStartScore> score_starts(const MigGpuState& gpu, int profile, const MigTargetMix& mix);
std::optional<int> mig_aware_start(const MigGpuState& gpu, int profile, const MigTargetMix& mix);

// How many more instances of `profile` alone could be added now.
int placeable_instances(const MigGpuState& gpu, int profile);

// FGD-style fragmentation of one MIG GPU for a target mix, in milli-GPUs.
double mig_fragmentation_milli(const MigGpuState& gpu, const MigTargetMix& mix);

}  // namespace gpupack
