#include "mig/mig_slots.h"

#include <bit>

#include <fmt/format.h>

namespace gpupack {
namespace {

std::string start_list(uint8_t mask) {
  std::string out;
  for (int s = 0; s < kMaxMigMemorySlices; ++s) {
    if ((mask & (1u << s)) == 0) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(s);
  }
  return "{" + out + "}";
}

}  // namespace

std::string MigGpuState::check_profile(int profile) const {
  if (profile < 0 || profile >= geo_->size()) {
    return fmt::format("profile index {} is not a {} profile (0..{})", profile, geo_->model_name, geo_->size() - 1);
  }
  return {};
}

std::string MigGpuState::budget_refusal(const MigProfile& p, int profile) const {
  if (counts_[profile] >= p.max_instances) {
    return fmt::format("{} already has {} instance(s), the most a {} allows", p.name, counts_[profile],
                       geo_->model_name);
  }
  if (p.media_extension && me_used_ > 0) {
    return fmt::format("{} is a +me profile and the GPU already has a +me instance", p.name);
  }
  if (compute_used_ + p.compute_slices > geo_->compute_slices) {
    return fmt::format("{} needs {} compute slice(s) but only {} of {} are free", p.name, p.compute_slices,
                       compute_free(), geo_->compute_slices);
  }
  return {};
}

std::string MigGpuState::why_not_anywhere(int profile) const {
  if (auto bad = check_profile(profile); !bad.empty()) return bad;
  const MigProfile& p = geo_->profiles[profile];
  if (auto bad = budget_refusal(p, profile); !bad.empty()) return bad;
  for (int s = 0; s < geo_->memory_slices; ++s) {
    if ((p.start_mask & (1u << s)) && (occupied_ & p.slice_bits(s)) == 0) return {};
  }
  return fmt::format("every placement of {} (starts {}, {} slice(s)) overlaps an existing instance", p.name,
                     start_list(p.start_mask), p.memory_slices);
}

std::string MigGpuState::why_not(int profile, int start) const {
  if (auto bad = check_profile(profile); !bad.empty()) return bad;
  const MigProfile& p = geo_->profiles[profile];
  if (start < 0 || start >= geo_->memory_slices || (p.start_mask & (1u << start)) == 0) {
    return fmt::format("{} cannot start at memory slice {} (valid starts {})", p.name, start, start_list(p.start_mask));
  }
  if (auto bad = budget_refusal(p, profile); !bad.empty()) return bad;
  const uint8_t clash = occupied_ & p.slice_bits(start);
  if (clash != 0) {
    const int s = std::countr_zero(static_cast<unsigned>(clash));
    // Name the instance that holds the first clashing slice.
    for (int t = s; t >= 0; --t) {
      if (at_start_[t] == kNone) continue;
      const MigProfile& q = geo_->profiles[at_start_[t]];
      if (q.slice_bits(t) & (1u << s)) {
        return fmt::format("{} at {} overlaps {} at {} (memory slice {})", p.name, start, q.name, t, s);
      }
    }
    return fmt::format("{} at {} overlaps memory slice {}", p.name, start, s);
  }
  return {};
}

uint8_t MigGpuState::valid_starts(int profile) const {
  if (!why_not_anywhere(profile).empty()) return 0;
  const MigProfile& p = geo_->profiles[profile];
  uint8_t out = 0;
  for (int s = 0; s < geo_->memory_slices; ++s) {
    if ((p.start_mask & (1u << s)) && (occupied_ & p.slice_bits(s)) == 0) out |= 1u << s;
  }
  return out;
}

std::vector<int> MigGpuState::valid_start_list(int profile) const {
  std::vector<int> out;
  const uint8_t mask = valid_starts(profile);
  for (int s = 0; s < kMaxMigMemorySlices; ++s) {
    if (mask & (1u << s)) out.push_back(s);
  }
  return out;
}

std::string MigGpuState::place(int profile, int start) {
  if (auto bad = why_not(profile, start); !bad.empty()) return bad;
  const MigProfile& p = geo_->profiles[profile];
  occupied_ |= p.slice_bits(start);
  compute_used_ = static_cast<uint8_t>(compute_used_ + p.compute_slices);
  if (p.media_extension) ++me_used_;
  ++counts_[profile];
  at_start_[start] = static_cast<int8_t>(profile);
  return {};
}

std::string MigGpuState::remove(int profile, int start) {
  if (auto bad = check_profile(profile); !bad.empty()) return bad;
  const MigProfile& p = geo_->profiles[profile];
  if (start < 0 || start >= geo_->memory_slices || at_start_[start] != profile) {
    return fmt::format("no {} instance starts at memory slice {}", p.name, start);
  }
  occupied_ &= static_cast<uint8_t>(~p.slice_bits(start));
  compute_used_ = static_cast<uint8_t>(compute_used_ - p.compute_slices);
  if (p.media_extension) --me_used_;
  --counts_[profile];
  at_start_[start] = kNone;
  return {};
}

uint8_t MigGpuState::free_mask() const {
  const unsigned all = (1u << geo_->memory_slices) - 1u;
  return static_cast<uint8_t>(all & ~static_cast<unsigned>(occupied_));
}

int MigGpuState::free_memory_slices() const { return std::popcount(static_cast<unsigned>(free_mask())); }

int MigGpuState::instance_count() const {
  int n = 0;
  for (uint8_t c : counts_) n += c;
  return n;
}

std::vector<MigPlacement> MigGpuState::instances() const {
  std::vector<MigPlacement> out;
  for (int s = 0; s < kMaxMigMemorySlices; ++s) {
    if (at_start_[s] != kNone) out.push_back({at_start_[s], s});
  }
  return out;
}

}  // namespace gpupack
