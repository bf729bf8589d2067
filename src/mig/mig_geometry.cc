#include "mig/mig_geometry.h"

#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

namespace gpupack {
namespace {

// Start masks (bit s = memory slice s), from `nvidia-smi mig -lgipp`.
constexpr uint8_t kStarts0to6 = 0x7F;  // {0,1,2,3,4,5,6}:1
constexpr uint8_t kStartsEven = 0x55;  // {0,2,4,6}:2  (1g with two memory slices)
constexpr uint8_t kStarts024 = 0x15;   // {0,2,4}:2
constexpr uint8_t kStarts04 = 0x11;    // {0,4}:4
constexpr uint8_t kStart0 = 0x01;      // {0}
constexpr uint8_t kStarts0to3 = 0x0F;  // A30 {0,1,2,3}:1
constexpr uint8_t kStarts02 = 0x05;    // A30 {0,2}:2

// Per-model figures for the seven profiles of the 8-slice family, in table
// order: 1 slice, 1 slice +me, 1g with 2 slices, 2g, 3g, 4g, 7g.
struct EightSliceModel {
  const char* model;
  std::vector<std::string> pci_ids;
  const char* names[7];
  int64_t memory_mib[7];
  int sm_count[7];
  bool inferred[7];
  bool table_inferred;
};

MigGeometry eight_slice(const EightSliceModel& m) {
  // NVML profile ids, g, memory slices, max instances, starts, +me: shared by
  // A100, H100 and H200 (mig.md, "8-slice family").
  static constexpr int kIds[7] = {19, 20, 15, 14, 9, 5, 0};
  static constexpr int kG[7] = {1, 1, 1, 2, 3, 4, 7};
  static constexpr int kMem[7] = {1, 1, 2, 2, 4, 4, 8};
  static constexpr int kMax[7] = {7, 1, 4, 3, 2, 1, 1};
  static constexpr uint8_t kStarts[7] = {kStarts0to6, kStarts0to6, kStartsEven, kStarts024,
                                         kStarts04,   kStart0,     kStart0};
  MigGeometry g;
  const auto id = GpuCatalog::builtin().find(m.model);
  g.model = id.value_or(0);
  g.model_name = m.model;
  g.memory_slices = 8;
  g.compute_slices = 7;
  g.inferred = m.table_inferred;
  g.pci_device_ids = m.pci_ids;
  for (int i = 0; i < 7; ++i) {
    MigProfile p;
    p.name = m.names[i];
    p.nvml_profile_id = kIds[i];
    p.compute_slices = kG[i];
    p.memory_slices = kMem[i];
    p.sm_count = m.sm_count[i];
    p.memory_mib = m.memory_mib[i];
    p.max_instances = kMax[i];
    p.start_mask = kStarts[i];
    p.media_extension = (i == 1);
    p.inferred = m.inferred[i] || m.table_inferred;
    g.profiles.push_back(std::move(p));
  }
  return g;
}

// H200 memory is not published per profile: scale the H100 figure by the
// ratio of usable memory (143771 / 81559 MiB), rounded down. INFERRED.
int64_t h200_from_h100(int64_t h100_mib) {
  return static_cast<int64_t>(std::floor(static_cast<double>(h100_mib) * 143771.0 / 81559.0));
}

std::vector<MigGeometry> build_tables() {
  std::vector<MigGeometry> out;
  // A100-40GB: ids and placements from the MIG guide's -lgipp example;
  // memory from go-nvml's A100 mock (MB as NVML reports); 14 SMs per slice.
  out.push_back(eight_slice({"A100-40GB",
                             {"0x20B010DE", "0x20F110DE"},
                             {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
                             {4864, 4864, 9856, 9856, 19968, 19968, 40192},
                             {14, 14, 14, 28, 42, 56, 98},
                             {false, false, false, false, false, false, false},
                             false}));
  // A100-80GB: same geometry; memory from the 80GB mock. The NVML profile ids
  // are ASSUMED equal to the 40GB ones (no 80GB -lgip dump seen), so every
  // profile is flagged inferred.
  out.push_back(eight_slice({"A100-80GB",
                             {"0x20B210DE", "0x20B510DE"},
                             {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
                             {9856, 9856, 19968, 19968, 40192, 40192, 80384},
                             {14, 14, 14, 28, 42, 56, 98},
                             {true, true, true, true, true, true, true},
                             false}));
  // H100-80GB SXM: ids and placements confirmed by real -lgip/-lgipp output.
  // Memory: GFD labels where seen (1g.10gb 9984, 2g.20gb 20096, 3g.40gb 40320);
  // 1g.10gb+me, 1g.20gb and 4g.40gb take the figure of the profile with the
  // same memory slices; 7g.80gb is -lgip's 79.25 GiB.
  out.push_back(eight_slice({"H100-80GB",
                             {"0x233010DE"},
                             {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
                             {9984, 9984, 20096, 20096, 40320, 40320, 81152},
                             {16, 16, 26, 32, 60, 64, 132},
                             {false, false, false, false, false, false, false},
                             false}));
  // H200 141GB: names and engine counts from the MIG guide and operator
  // configs; ids and placements are INFERRED from H100 (same GH100 geometry),
  // memory is INFERRED (scaled), SMs follow H100 and user reports.
  out.push_back(eight_slice({"H200",
                             {"0x233510DE", "0x233B10DE"},
                             {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
                             {h200_from_h100(9984), h200_from_h100(9984), h200_from_h100(20096), h200_from_h100(20096),
                              h200_from_h100(40320), h200_from_h100(40320), h200_from_h100(81152)},
                             {16, 16, 26, 32, 60, 64, 132},
                             {true, true, true, true, true, true, true},
                             true}));
  // A30-24GB: 4 memory and 4 compute slices. Ids, placements and memory from
  // real -lgipp output and go-nvml's A30 mock; 2g.12gb+me's placement comes
  // from the mock only (not seen on hardware), so it is flagged inferred.
  {
    MigGeometry g;
    g.model = GpuCatalog::builtin().find("A30").value_or(0);
    g.model_name = "A30";
    g.memory_slices = 4;
    g.compute_slices = 4;
    g.pci_device_ids = {"0x20B710DE"};
    auto add = [&](const char* name, int id, int gs, int mem, int sms, int64_t mib, int max, uint8_t starts, bool me,
                   bool inferred) {
      MigProfile p;
      p.name = name;
      p.nvml_profile_id = id;
      p.compute_slices = gs;
      p.memory_slices = mem;
      p.sm_count = sms;
      p.memory_mib = mib;
      p.max_instances = max;
      p.start_mask = starts;
      p.media_extension = me;
      p.inferred = inferred;
      g.profiles.push_back(std::move(p));
    };
    add("1g.6gb", 14, 1, 1, 14, 5836, 4, kStarts0to3, false, false);
    add("1g.6gb+me", 21, 1, 1, 14, 5836, 1, kStarts0to3, true, false);
    add("2g.12gb", 5, 2, 2, 28, 11672, 2, kStarts02, false, false);
    add("2g.12gb+me", 6, 2, 2, 28, 11672, 1, kStarts02, true, true);
    add("4g.24gb", 0, 4, 4, 56, 23344, 1, kStart0, false, false);
    out.push_back(std::move(g));
  }
  // H100 NVL 94GB is not in the GPU catalog, so it has no table here.
  return out;
}

}  // namespace

std::string MigProfile::resource_name() const { return "nvidia.com/mig-" + config_token(); }

std::string MigProfile::config_token() const {
  std::string s = name;
  std::replace(s.begin(), s.end(), '+', '.');
  return s;
}

std::vector<int> MigProfile::starts() const {
  std::vector<int> out;
  for (int s = 0; s < kMaxMigMemorySlices; ++s) {
    if (start_mask & (1u << s)) out.push_back(s);
  }
  return out;
}

std::optional<int> MigGeometry::find(std::string_view name) const {
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  std::string_view bare = name;
  if (bare.size() > kPrefix.size() && iequals(bare.substr(0, kPrefix.size()), kPrefix)) {
    bare = bare.substr(kPrefix.size());
  }
  for (int i = 0; i < size(); ++i) {
    if (iequals(profiles[i].name, bare) || iequals(profiles[i].config_token(), bare)) return i;
  }
  return std::nullopt;
}

std::string MigGeometry::profile_names() const {
  std::string out;
  for (const auto& p : profiles) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

const std::vector<MigGeometry>& all_mig_geometries() {
  static const std::vector<MigGeometry> tables = build_tables();
  return tables;
}

const MigGeometry* mig_geometry(GpuModelId model) {
  for (const auto& g : all_mig_geometries()) {
    if (g.model == model) return &g;
  }
  return nullptr;
}

const MigGeometry* mig_geometry(std::string_view model_name) {
  const auto id = GpuCatalog::builtin().find(model_name);
  return id ? mig_geometry(*id) : nullptr;
}

std::optional<int> smallest_profile_for(const MigGeometry& geo, int64_t memory_mib, int sm_count,
                                        bool allow_media_extension) {
  std::optional<int> best;
  for (int i = 0; i < geo.size(); ++i) {
    const MigProfile& p = geo.profiles[i];
    if (p.media_extension && !allow_media_extension) continue;
    if (p.memory_mib < memory_mib || p.sm_count < sm_count) continue;
    if (!best) {
      best = i;
      continue;
    }
    const MigProfile& b = geo.profiles[*best];
    auto key = [](const MigProfile& x) {
      return std::tuple(x.memory_slices, x.compute_slices, x.media_extension ? 1 : 0);
    };
    if (key(p) < key(b)) best = i;
  }
  return best;
}

}  // namespace gpupack
