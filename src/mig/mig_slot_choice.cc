#include "mig/mig_slot_choice.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include <fmt/format.h>

namespace gpupack {

MigTargetMix size_weighted_mix(const MigGeometry& geo) {
  MigTargetMix mix;
  for (const auto& p : geo.profiles) {
    mix.weight.push_back(p.media_extension ? 0.0 : static_cast<double>(p.memory_slices));
  }
  return mix;
}

MigTargetMix mix_from_names(const MigGeometry& geo, const std::map<std::string, double>& weights) {
  MigTargetMix mix;
  mix.weight.assign(static_cast<size_t>(geo.size()), 0.0);
  for (const auto& [name, w] : weights) {
    const auto idx = geo.find(name);
    if (!idx) {
      throw std::invalid_argument(
          fmt::format("unknown MIG profile '{}' for {} (known: {})", name, geo.model_name, geo.profile_names()));
    }
    if (w < 0) {
      throw std::invalid_argument(fmt::format("weight of MIG profile '{}' is negative ({})", name, w));
    }
    mix.weight[static_cast<size_t>(*idx)] = w;
  }
  return mix;
}

std::optional<int> first_free_start(const MigGpuState& gpu, int profile) {
  const uint8_t mask = gpu.valid_starts(profile);
  if (mask == 0) return std::nullopt;
  return std::countr_zero(static_cast<unsigned>(mask));
}

int placeable_instances(const MigGpuState& gpu, int profile) {
  const uint8_t starts = gpu.valid_starts(profile);
  if (starts == 0) return 0;
  const MigProfile& p = gpu.geometry().profile(profile);
  // Greedy from the lowest start: optimal for intervals of equal size.
  int disjoint = 0;
  uint8_t used = 0;
  for (int s = 0; s < kMaxMigMemorySlices; ++s) {
    if ((starts & (1u << s)) && (used & p.slice_bits(s)) == 0) {
      used |= p.slice_bits(s);
      ++disjoint;
    }
  }
  int limit = std::min(disjoint, p.max_instances - gpu.count(profile));
  limit = std::min(limit, gpu.compute_free() / p.compute_slices);
  if (p.media_extension) limit = std::min(limit, 1);
  return limit;
}

namespace {

double weight_of(const MigTargetMix& mix, int profile) {
  return static_cast<size_t>(profile) < mix.weight.size() ? mix.weight[profile] : 0.0;
}

}  // namespace

std::vector<MigStartScore> score_starts(const MigGpuState& gpu, int profile, const MigTargetMix& mix) {
  std::vector<MigStartScore> out;
  const int n = gpu.geometry().size();
  for (int s : gpu.valid_start_list(profile)) {
    MigGpuState after = gpu;
    after.place(profile, s);
    MigStartScore score{s, 0.0, 0.0};
    for (int q = 0; q < n; ++q) {
      const double w = weight_of(mix, q);
      if (w == 0) continue;
      const int cap = placeable_instances(after, q);
      if (cap == 0) score.blocked_weight += w;
      score.capacity_weight += w * cap;
    }
    out.push_back(score);
  }
  return out;
}

std::optional<int> mig_aware_start(const MigGpuState& gpu, int profile, const MigTargetMix& mix) {
  const auto scores = score_starts(gpu, profile, mix);
  if (scores.empty()) return std::nullopt;
  const MigStartScore* best = &scores.front();
  for (const auto& s : scores) {
    if (s.blocked_weight < best->blocked_weight ||
        (s.blocked_weight == best->blocked_weight && s.capacity_weight > best->capacity_weight)) {
      best = &s;  // ascending starts: equal scores keep the lower start
    }
  }
  return best->start;
}

double mig_fragmentation_milli(const MigGpuState& gpu, const MigTargetMix& mix) {
  const MigGeometry& geo = gpu.geometry();
  double total_weight = 0;
  for (int q = 0; q < geo.size(); ++q) total_weight += weight_of(mix, q);
  if (total_weight <= 0) return 0.0;
  const uint8_t free = gpu.free_mask();
  const double milli_per_slice = 1000.0 / geo.memory_slices;
  double frag = 0;
  for (int q = 0; q < geo.size(); ++q) {
    const double w = weight_of(mix, q);
    if (w == 0) continue;
    const uint8_t starts = gpu.valid_starts(q);
    uint8_t usable = 0;
    for (int s = 0; s < geo.memory_slices; ++s) {
      if (starts & (1u << s)) usable |= geo.profile(q).slice_bits(s);
    }
    const int stranded = std::popcount(static_cast<unsigned>(free & ~usable));
    frag += (w / total_weight) * stranded * milli_per_slice;
  }
  return frag;
}

}  // namespace gpupack
