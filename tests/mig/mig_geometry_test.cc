#include "mig/mig_geometry.h"

#include <gtest/gtest.h>

#include <set>

namespace gpupack {
namespace {

// Reference rows (docs/MIG.md, from the MIG guide's -lgip/-lgipp output):
// name, NVML id, g, memory slices, SMs, memory MiB, max instances, starts.
struct Row {
  const char* name;
  int id, g, mem, sms;
  int64_t mib;
  int max;
  std::set<int> starts;
};

void expect_table(const char* model, const std::vector<Row>& rows, int mem_slices, int compute) {
  const MigGeometry* geo = mig_geometry(model);
  ASSERT_NE(geo, nullptr) << model;
  EXPECT_EQ(geo->model_name, model);
  EXPECT_EQ(geo->memory_slices, mem_slices);
  EXPECT_EQ(geo->compute_slices, compute);
  ASSERT_EQ(geo->size(), static_cast<int>(rows.size())) << model;
  for (const Row& r : rows) {
    const auto idx = geo->find(r.name);
    ASSERT_TRUE(idx.has_value()) << model << " " << r.name;
    const MigProfile& p = geo->profile(*idx);
    EXPECT_EQ(p.nvml_profile_id, r.id) << r.name;
    EXPECT_EQ(p.compute_slices, r.g) << r.name;
    EXPECT_EQ(p.memory_slices, r.mem) << r.name;
    EXPECT_EQ(p.sm_count, r.sms) << r.name;
    EXPECT_EQ(p.memory_mib, r.mib) << r.name;
    EXPECT_EQ(p.max_instances, r.max) << r.name;
    const auto starts = p.starts();
    EXPECT_EQ(std::set<int>(starts.begin(), starts.end()), r.starts) << r.name;
    EXPECT_EQ(p.media_extension, std::string(r.name).find("+me") != std::string::npos);
  }
}

const std::set<int> k0to6{0, 1, 2, 3, 4, 5, 6};

TEST(MigGeometry, A100_40GB) {
  expect_table("A100-40GB",
               {{"1g.5gb", 19, 1, 1, 14, 4864, 7, k0to6},
                {"1g.5gb+me", 20, 1, 1, 14, 4864, 1, k0to6},
                {"1g.10gb", 15, 1, 2, 14, 9856, 4, {0, 2, 4, 6}},
                {"2g.10gb", 14, 2, 2, 28, 9856, 3, {0, 2, 4}},
                {"3g.20gb", 9, 3, 4, 42, 19968, 2, {0, 4}},
                {"4g.20gb", 5, 4, 4, 56, 19968, 1, {0}},
                {"7g.40gb", 0, 7, 8, 98, 40192, 1, {0}}},
               8, 7);
}

TEST(MigGeometry, A100_80GB) {
  expect_table("A100-80GB",
               {{"1g.10gb", 19, 1, 1, 14, 9856, 7, k0to6},
                {"1g.10gb+me", 20, 1, 1, 14, 9856, 1, k0to6},
                {"1g.20gb", 15, 1, 2, 14, 19968, 4, {0, 2, 4, 6}},
                {"2g.20gb", 14, 2, 2, 28, 19968, 3, {0, 2, 4}},
                {"3g.40gb", 9, 3, 4, 42, 40192, 2, {0, 4}},
                {"4g.40gb", 5, 4, 4, 56, 40192, 1, {0}},
                {"7g.80gb", 0, 7, 8, 98, 80384, 1, {0}}},
               8, 7);
  // Ids are assumed equal to the 40GB ones: flagged.
  EXPECT_TRUE(mig_geometry("A100-80GB")->profile(0).inferred);
}

TEST(MigGeometry, H100_80GB) {
  expect_table("H100-80GB",
               {{"1g.10gb", 19, 1, 1, 16, 9984, 7, k0to6},
                {"1g.10gb+me", 20, 1, 1, 16, 9984, 1, k0to6},
                {"1g.20gb", 15, 1, 2, 26, 20096, 4, {0, 2, 4, 6}},
                {"2g.20gb", 14, 2, 2, 32, 20096, 3, {0, 2, 4}},
                {"3g.40gb", 9, 3, 4, 60, 40320, 2, {0, 4}},
                {"4g.40gb", 5, 4, 4, 64, 40320, 1, {0}},
                {"7g.80gb", 0, 7, 8, 132, 81152, 1, {0}}},
               8, 7);
  EXPECT_FALSE(mig_geometry("H100-80GB")->inferred);
}

TEST(MigGeometry, A30) {
  expect_table("A30",
               {{"1g.6gb", 14, 1, 1, 14, 5836, 4, {0, 1, 2, 3}},
                {"1g.6gb+me", 21, 1, 1, 14, 5836, 1, {0, 1, 2, 3}},
                {"2g.12gb", 5, 2, 2, 28, 11672, 2, {0, 2}},
                {"2g.12gb+me", 6, 2, 2, 28, 11672, 1, {0, 2}},
                {"4g.24gb", 0, 4, 4, 56, 23344, 1, {0}}},
               4, 4);
}

TEST(MigGeometry, H200IsInferredAndFollowsH100Geometry) {
  const MigGeometry* h200 = mig_geometry("H200");
  const MigGeometry* h100 = mig_geometry("H100-80GB");
  ASSERT_NE(h200, nullptr);
  EXPECT_TRUE(h200->inferred);
  ASSERT_EQ(h200->size(), h100->size());
  const char* names[] = {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"};
  for (int i = 0; i < h200->size(); ++i) {
    const MigProfile& p = h200->profile(i);
    EXPECT_EQ(p.name, names[i]);
    EXPECT_TRUE(p.inferred);
    EXPECT_EQ(p.start_mask, h100->profile(i).start_mask);
    EXPECT_EQ(p.memory_slices, h100->profile(i).memory_slices);
    EXPECT_EQ(p.sm_count, h100->profile(i).sm_count);
    EXPECT_GT(p.memory_mib, h100->profile(i).memory_mib);
  }
  // The name's GB figure is the memory fraction of 141 GB rounded: the
  // inferred MiB must stay below that many GiB.
  EXPECT_LE(h200->profile(*h200->find("1g.18gb")).memory_mib, 18 * 1024);
  EXPECT_LE(h200->profile(*h200->find("7g.141gb")).memory_mib, 141 * 1024);
}

TEST(MigGeometry, NonMigModelsHaveNoTable) {
  EXPECT_EQ(mig_geometry("V100M32"), nullptr);
  EXPECT_EQ(mig_geometry("L40S"), nullptr);
  EXPECT_EQ(mig_geometry("no-such-gpu"), nullptr);
  for (const auto& g : all_mig_geometries()) {
    EXPECT_TRUE(GpuCatalog::builtin().spec(g.model).mig_capable) << g.model_name;
    EXPECT_EQ(GpuCatalog::builtin().spec(g.model).name, g.model_name);
  }
  EXPECT_EQ(all_mig_geometries().size(), 5u);
}

TEST(MigGeometry, ResourceNamesAndLookupSpellings) {
  const MigGeometry* geo = mig_geometry("A100-40GB");
  const MigProfile& me = geo->profile(*geo->find("1g.5gb+me"));
  EXPECT_EQ(me.resource_name(), "nvidia.com/mig-1g.5gb.me");
  EXPECT_EQ(me.config_token(), "1g.5gb.me");
  EXPECT_EQ(geo->profile(*geo->find("3g.20gb")).resource_name(), "nvidia.com/mig-3g.20gb");
  EXPECT_EQ(geo->find("nvidia.com/mig-1g.5gb.me"), geo->find("1g.5gb+me"));
  EXPECT_EQ(geo->find("1G.5GB"), geo->find("1g.5gb"));
  EXPECT_FALSE(geo->find("1g.10gb+me").has_value());
  EXPECT_FALSE(geo->find("3g.40gb").has_value());  // an 80GB name
}

TEST(MigGeometry, SmallestProfileByNeed) {
  const MigGeometry* geo = mig_geometry("A100-40GB");
  auto name = [&](int64_t mib, int sms) -> std::string {
    auto i = smallest_profile_for(*geo, mib, sms);
    return i ? geo->profile(*i).name : "none";
  };
  EXPECT_EQ(name(0, 0), "1g.5gb");
  EXPECT_EQ(name(4864, 14), "1g.5gb");
  EXPECT_EQ(name(4865, 0), "1g.10gb");   // 2 memory slices, 1 compute slice
  EXPECT_EQ(name(9000, 20), "2g.10gb");  // 2 slices but needs 28 SMs
  EXPECT_EQ(name(10000, 0), "3g.20gb");  // 4 slices, fewest compute slices
  EXPECT_EQ(name(10000, 43), "4g.20gb");
  EXPECT_EQ(name(20000, 0), "7g.40gb");
  EXPECT_EQ(name(50000, 0), "none");
  EXPECT_EQ(name(0, 99), "none");
  auto me = smallest_profile_for(*geo, 1000, 1, /*allow_media_extension=*/true);
  EXPECT_EQ(geo->profile(*me).name, "1g.5gb");  // plain preferred over +me

  const MigGeometry* a30 = mig_geometry("A30");
  EXPECT_EQ(a30->profile(*smallest_profile_for(*a30, 6000, 0)).name, "2g.12gb");
}

}  // namespace
}  // namespace gpupack
