#include "mig/mig_slots.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace gpupack {
namespace {

// Placement tables of the reference (mig.md), written out independently of
// the library: profile -> (memory slices, compute slices, valid starts).
struct RefProfile {
  int mem, g, max;
  std::set<int> starts;
  bool me;
};
using RefTable = std::map<std::string, RefProfile>;

RefTable eight_slice(const char* p1, const char* p1me, const char* p1x2, const char* p2, const char* p3, const char* p4,
                     const char* p7) {
  return {{p1, {1, 1, 7, {0, 1, 2, 3, 4, 5, 6}, false}},
          {p1me, {1, 1, 1, {0, 1, 2, 3, 4, 5, 6}, true}},
          {p1x2, {2, 1, 4, {0, 2, 4, 6}, false}},
          {p2, {2, 2, 3, {0, 2, 4}, false}},
          {p3, {4, 3, 2, {0, 4}, false}},
          {p4, {4, 4, 1, {0}, false}},
          {p7, {8, 7, 1, {0}, false}}};
}

const std::map<std::string, std::pair<RefTable, int>>& reference() {
  static const std::map<std::string, std::pair<RefTable, int>> ref = {
      {"A100-40GB", {eight_slice("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"), 7}},
      {"A100-80GB", {eight_slice("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"), 7}},
      {"H100-80GB", {eight_slice("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"), 7}},
      {"A30",
       {{{"1g.6gb", {1, 1, 4, {0, 1, 2, 3}, false}},
         {"1g.6gb+me", {1, 1, 1, {0, 1, 2, 3}, true}},
         {"2g.12gb", {2, 2, 2, {0, 2}, false}},
         {"2g.12gb+me", {2, 2, 1, {0, 2}, true}},
         {"4g.24gb", {4, 4, 1, {0}, false}}},
        4}},
  };
  return ref;
}

TEST(MigSlots, EveryProfileAndStartOnAnEmptyGpuMatchesTheReference) {
  for (const auto& [model, entry] : reference()) {
    const auto& [table, budget] = entry;
    const MigGeometry* geo = mig_geometry(model);
    ASSERT_NE(geo, nullptr) << model;
    for (const auto& [name, ref] : table) {
      const int p = *geo->find(name);
      for (int s = -1; s <= geo->memory_slices; ++s) {
        MigGpuState gpu(*geo);
        const bool expect = ref.starts.count(s) > 0;
        const std::string why = gpu.why_not(p, s);
        EXPECT_EQ(why.empty(), expect) << model << " " << name << " at " << s << ": " << why;
        if (!expect) {
          EXPECT_NE(why.find("cannot start"), std::string::npos) << why;
          EXPECT_NE(gpu.place(p, s), "");
          EXPECT_TRUE(gpu.empty());
          continue;
        }
        ASSERT_EQ(gpu.place(p, s), "");
        const uint8_t expected_bits = static_cast<uint8_t>(((1u << ref.mem) - 1u) << s);
        EXPECT_EQ(gpu.occupied_mask(), expected_bits) << model << " " << name << " at " << s;
        EXPECT_EQ(gpu.compute_used(), ref.g);
        EXPECT_EQ(gpu.count(p), 1);
        EXPECT_EQ(gpu.instances(), (std::vector<MigPlacement>{{p, s}}));
      }
    }
  }
}

// Every ordered pair (profile a at start sa, then profile b at start sb):
// the second placement is accepted exactly when the reference rules say so.
TEST(MigSlots, EveryPairOfPlacementsFollowsOverlapBudgetAndMediaRules) {
  int checked = 0;
  for (const auto& [model, entry] : reference()) {
    const auto& [table, budget] = entry;
    const MigGeometry* geo = mig_geometry(model);
    for (const auto& [na, ra] : table) {
      for (int sa : ra.starts) {
        for (const auto& [nb, rb] : table) {
          for (int sb : rb.starts) {
            MigGpuState gpu(*geo);
            ASSERT_EQ(gpu.place(*geo->find(na), sa), "");
            const bool overlap = sa < sb + rb.mem && sb < sa + ra.mem;
            const bool over_budget = ra.g + rb.g > budget;
            const bool two_me = ra.me && rb.me;
            const bool over_max = na == nb && rb.max < 2;
            const bool expect = !overlap && !over_budget && !two_me && !over_max;
            const MigGpuState before = gpu;
            const std::string why = gpu.place(*geo->find(nb), sb);
            EXPECT_EQ(why.empty(), expect)
                << model << ": " << na << "@" << sa << " then " << nb << "@" << sb << ": " << why;
            if (!expect) {
              EXPECT_TRUE(gpu == before) << "a refused place changed the state";
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(MigSlots, NamedOverlapCasesGiveReasons) {
  const MigGeometry& a100 = *mig_geometry("A100-40GB");
  auto idx = [&](const char* n) { return *a100.find(n); };
  {
    // R510+ semantics: 3g at 4 and then 4g at 0 share no slice and use 7 g.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("3g.20gb"), 4), "");
    EXPECT_EQ(gpu.place(idx("4g.20gb"), 0), "");
    EXPECT_EQ(gpu.compute_free(), 0);
    EXPECT_EQ(gpu.free_memory_slices(), 0);
  }
  {
    // 3g at 0 then 4g at 0: overlap.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("3g.20gb"), 0), "");
    const auto why = gpu.why_not(idx("4g.20gb"), 0);
    EXPECT_NE(why.find("overlaps 3g.20gb at 0"), std::string::npos) << why;
  }
  {
    // 2g at 0 then the two-slice 1g.10gb at 0: overlap.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("2g.10gb"), 0), "");
    const auto why = gpu.why_not(idx("1g.10gb"), 0);
    EXPECT_NE(why.find("overlaps 2g.10gb at 0"), std::string::npos) << why;
    EXPECT_EQ(gpu.why_not(idx("1g.10gb"), 2), "");
  }
  {
    // 1g.10gb at 6 takes slices 6 and 7; 1g.5gb cannot start at 7 anyway.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("1g.10gb"), 6), "");
    EXPECT_EQ(gpu.occupied_mask(), 0xC0);
    EXPECT_NE(gpu.why_not(idx("1g.5gb"), 6).find("overlaps 1g.10gb at 6"), std::string::npos);
    EXPECT_NE(gpu.why_not(idx("1g.5gb"), 7).find("cannot start"), std::string::npos);
  }
  {
    // Compute budget: 4g + 2g + 1g leaves no compute slice for a 1g.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("4g.20gb"), 0), "");
    ASSERT_EQ(gpu.place(idx("2g.10gb"), 4), "");
    ASSERT_EQ(gpu.place(idx("1g.5gb"), 6), "");
    EXPECT_EQ(gpu.free_mask(), 0x80);  // slice 7 free but unusable
    const auto why = gpu.why_not_anywhere(idx("1g.5gb"));
    EXPECT_NE(why.find("compute slice"), std::string::npos) << why;
  }
  {
    // One +me instance per GPU.
    MigGpuState gpu(a100);
    ASSERT_EQ(gpu.place(idx("1g.5gb+me"), 0), "");
    EXPECT_NE(gpu.why_not(idx("1g.5gb+me"), 1).find("+me"), std::string::npos);
    EXPECT_EQ(gpu.valid_starts(idx("1g.5gb+me")), 0);
  }
  {
    // Max instances: 3 x 2g fill starts 0,2,4; a fourth has no valid start
    // and the count limit is named first.
    MigGpuState gpu(a100);
    for (int s : {0, 2, 4}) ASSERT_EQ(gpu.place(idx("2g.10gb"), s), "");
    EXPECT_NE(gpu.why_not(idx("2g.10gb"), 0).find("already has 3"), std::string::npos);
  }
}

TEST(MigSlots, RemoveRestoresTheStateAndChecksTheInstance) {
  const MigGeometry& h100 = *mig_geometry("H100-80GB");
  const int g2 = *h100.find("2g.20gb");
  const int g1x2 = *h100.find("1g.20gb");
  MigGpuState gpu(h100);
  const MigGpuState empty = gpu;
  ASSERT_EQ(gpu.place(g2, 0), "");
  // Same slices, different profile: not the instance that is there.
  EXPECT_NE(gpu.remove(g1x2, 0), "");
  EXPECT_NE(gpu.remove(g2, 2), "");
  EXPECT_EQ(gpu.remove(g2, 0), "");
  EXPECT_TRUE(gpu == empty);
  EXPECT_EQ(gpu.compute_used(), 0);
  EXPECT_NE(gpu.place(99, 0).find("not a H100-80GB profile"), std::string::npos);
}

TEST(MigSlots, ValidStartsListsOnlyFreeLegalStarts) {
  const MigGeometry& a100 = *mig_geometry("A100-80GB");
  MigGpuState gpu(a100);
  ASSERT_EQ(gpu.place(*a100.find("1g.10gb"), 3), "");
  EXPECT_EQ(gpu.valid_start_list(*a100.find("2g.20gb")), (std::vector<int>{0, 4}));
  EXPECT_EQ(gpu.valid_start_list(*a100.find("3g.40gb")), (std::vector<int>{4}));
  EXPECT_TRUE(gpu.valid_start_list(*a100.find("4g.40gb")).empty());
  EXPECT_TRUE(gpu.valid_start_list(*a100.find("7g.80gb")).empty());
  EXPECT_EQ(gpu.valid_start_list(*a100.find("1g.20gb")), (std::vector<int>{0, 4, 6}));
  EXPECT_LE(sizeof(MigGpuState), 32u);
}

}  // namespace
}  // namespace gpupack
