#include "mig/mig_layout.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace gpupack {
namespace {

MigLayoutResult refuse(std::string reason) { return {std::nullopt, std::move(reason)}; }

// Checks that do not depend on where instances go. Empty when all pass.
std::string precheck(const MigGeometry& geo, const MigCountVector& counts) {
  int compute = 0, memory = 0, me = 0;
  std::string me_names;
  for (int i = 0; i < geo.size(); ++i) {
    const MigProfile& p = geo.profile(i);
    const int n = counts[i];
    if (n > p.max_instances) {
      return fmt::format("{} x{} exceeds the {} instance(s) a {} allows", p.name, n, p.max_instances, geo.model_name);
    }
    compute += n * p.compute_slices;
    memory += n * p.memory_slices;
    if (p.media_extension && n > 0) {
      me += n;
      if (!me_names.empty()) me_names += ", ";
      me_names += p.name;
    }
  }
  if (me > 1) {
    return fmt::format("{} +me instances ({}) but a GPU allows at most one", me, me_names);
  }
  if (compute > geo.compute_slices) {
    return fmt::format("needs {} compute slices but a {} has {}", compute, geo.model_name, geo.compute_slices);
  }
  if (memory > geo.memory_slices) {
    return fmt::format("needs {} memory slices but a {} has {}", memory, geo.model_name, geo.memory_slices);
  }
  return {};
}

struct Search {
  const MigGeometry& geo;
  std::vector<int> order;  // profile of each instance to place
  MigGpuState state;

  bool run(size_t i, int min_start) {
    if (i == order.size()) return true;
    const int profile = order[i];
    const uint8_t starts = state.valid_starts(profile);
    for (int s = min_start; s < geo.memory_slices; ++s) {
      if ((starts & (1u << s)) == 0) continue;
      state.place(profile, s);
      const bool same_next = i + 1 < order.size() && order[i + 1] == profile;
      if (run(i + 1, same_next ? s + 1 : 0)) return true;
      state.remove(profile, s);
    }
    return false;
  }
};

std::string describe_counts(const MigGeometry& geo, const MigCountVector& counts) {
  std::string out;
  for (int i = 0; i < geo.size(); ++i) {
    if (counts[i] == 0) continue;
    out += fmt::format("{}{} x{}", out.empty() ? "" : " + ", geo.profile(i).name, counts[i]);
  }
  return out.empty() ? "(empty)" : out;
}

}  // namespace

MigLayoutResult build_layout(const MigGeometry& geo, const std::vector<MigPlacement>& placements) {
  MigGpuState state(geo);
  for (size_t i = 0; i < placements.size(); ++i) {
    if (auto why = state.place(placements[i].profile, placements[i].start); !why.empty()) {
      return refuse(fmt::format("instance {} of the layout: {}", i + 1, why));
    }
  }
  return {state, {}};
}

MigLayoutResult build_layout(const MigGeometry& geo, const std::vector<std::pair<std::string, int>>& named_placements) {
  std::vector<MigPlacement> placements;
  for (const auto& [name, start] : named_placements) {
    const auto idx = geo.find(name);
    if (!idx) {
      return refuse(
          fmt::format("unknown MIG profile '{}' for {} (known: {})", name, geo.model_name, geo.profile_names()));
    }
    placements.push_back({*idx, start});
  }
  return build_layout(geo, placements);
}

MigLayoutResult find_placement(const MigGeometry& geo, const MigCountVector& counts) {
  if (auto why = precheck(geo, counts); !why.empty()) return refuse(why);
  Search search{geo, {}, MigGpuState(geo)};
  for (int i = 0; i < geo.size(); ++i) {
    for (int k = 0; k < counts[i]; ++k) search.order.push_back(i);
  }
  // Largest first: most memory slices, then most compute slices.
  std::stable_sort(search.order.begin(), search.order.end(), [&](int a, int b) {
    const MigProfile& pa = geo.profile(a);
    const MigProfile& pb = geo.profile(b);
    if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
    return pa.compute_slices > pb.compute_slices;
  });
  if (search.run(0, 0)) return {search.state, {}};
  return refuse(
      fmt::format("no placement of {} on a {} avoids overlapping memory slices "
                  "(every combination of valid starts was tried)",
                  describe_counts(geo, counts), geo.model_name));
}

MigLayoutResult find_placement(const MigGeometry& geo, const MigProfileCounts& counts) {
  MigCountVector v{};
  try {
    v = count_vector(geo, counts);
  } catch (const std::invalid_argument& e) {
    return refuse(e.what());
  }
  return find_placement(geo, v);
}

MigCountVector count_vector(const MigGeometry& geo, const MigProfileCounts& counts) {
  MigCountVector v{};
  for (const auto& [name, n] : counts) {
    const auto idx = geo.find(name);
    if (!idx) {
      throw std::invalid_argument(
          fmt::format("unknown MIG profile '{}' for {} (known: {})", name, geo.model_name, geo.profile_names()));
    }
    if (n < 0 || n > 255) {
      throw std::invalid_argument(fmt::format("count of MIG profile '{}' is out of range ({})", name, n));
    }
    v[static_cast<size_t>(*idx)] = static_cast<uint8_t>(std::min(255, v[*idx] + n));
  }
  return v;
}

MigCountVector count_vector(const MigGpuState& gpu) {
  MigCountVector v{};
  for (int i = 0; i < gpu.geometry().size(); ++i) v[i] = static_cast<uint8_t>(gpu.count(i));
  return v;
}

MigProfileCounts counts_by_name(const MigGeometry& geo, const MigCountVector& counts) {
  MigProfileCounts out;
  for (int i = 0; i < geo.size(); ++i) {
    if (counts[i] > 0) out[geo.profile(i).name] = counts[i];
  }
  return out;
}

MigProfileCounts counts_by_name(const MigGpuState& gpu) { return counts_by_name(gpu.geometry(), count_vector(gpu)); }

std::string format_layout(const MigGpuState& gpu) {
  std::string out;
  for (const auto& inst : gpu.instances()) {
    out += fmt::format("{}{}@{}", out.empty() ? "" : " ", gpu.geometry().profile(inst.profile).name, inst.start);
  }
  return out.empty() ? "(empty)" : out;
}

namespace {

void enumerate(const MigGeometry& geo, int i, MigCountVector& cur, int compute, int memory,
               std::vector<MigCountVector>& out) {
  if (i == geo.size()) {
    if (find_placement(geo, cur).ok()) out.push_back(cur);
    return;
  }
  const MigProfile& p = geo.profile(i);
  for (int n = 0; n <= p.max_instances; ++n) {
    const int c = compute + n * p.compute_slices;
    const int m = memory + n * p.memory_slices;
    if (c > geo.compute_slices || m > geo.memory_slices) break;
    cur[i] = static_cast<uint8_t>(n);
    enumerate(geo, i + 1, cur, c, m, out);
  }
  cur[i] = 0;
}

}  // namespace

const std::vector<MigCountVector>& feasible_layouts(const MigGeometry& geo) {
  static std::mutex mu;
  static std::map<const MigGeometry*, std::vector<MigCountVector>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(&geo);
  if (it == cache.end()) {
    std::vector<MigCountVector> out;
    MigCountVector cur{};
    enumerate(geo, 0, cur, 0, 0, out);
    std::sort(out.begin(), out.end());
    it = cache.emplace(&geo, std::move(out)).first;
  }
  return it->second;
}

}  // namespace gpupack
