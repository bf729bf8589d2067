#include "model/gpu_catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpupack {
namespace {

TEST(GpuCatalog, FindsOpenbAndProductNamesIgnoringCase) {
  const auto& cat = GpuCatalog::builtin();
  auto v100 = cat.find("V100M32");
  ASSERT_TRUE(v100.has_value());
  EXPECT_EQ(cat.find("tesla v100-sxm2-32gb"), v100);
  EXPECT_EQ(cat.spec(*v100).sm_count, 80);
  for (const char* name : {"P100", "T4", "V100M16", "A10", "G1", "G2", "G3", "A100-40GB", "A100-80GB", "H100-80GB",
                           "H200", "L4", "L40S", "A30"}) {
    EXPECT_TRUE(cat.find(name).has_value()) << name;
  }
  EXPECT_FALSE(cat.find("RTX9090").has_value());
}

TEST(GpuCatalog, MigCapabilityFollowsTheReference) {
  const auto& cat = GpuCatalog::builtin();
  EXPECT_TRUE(cat.spec(*cat.find("A100-80GB")).mig_capable);
  EXPECT_TRUE(cat.spec(*cat.find("H200")).mig_capable);
  EXPECT_TRUE(cat.spec(*cat.find("H200")).inferred);
  EXPECT_EQ(cat.spec(*cat.find("A30")).max_mig_instances, 4);
  EXPECT_FALSE(cat.spec(*cat.find("A10")).mig_capable);
  EXPECT_FALSE(cat.spec(*cat.find("L40S")).mig_capable);
  // docs/GPU_CATALOG.md: MIG needs a listed product, not only compute capability >= 8.0.
  for (const char* name : {"A10G", "A40", "L40", "RTX-A6000", "RTX-4090"}) {
    EXPECT_FALSE(cat.spec(*cat.find(name)).mig_capable) << name;
  }
  for (const char* name : {"H100-PCIE", "H100-NVL", "H200-NVL", "H20", "GH200", "B200", "A100-80GB-PCIE"}) {
    EXPECT_EQ(cat.spec(*cat.find(name)).max_mig_instances, 7) << name;
  }
}

TEST(GpuCatalog, ProductLookupIsExactAfterNormalizing) {
  const auto& cat = GpuCatalog::builtin();
  EXPECT_EQ(normalize_product_name("NVIDIA A100-SXM4-40GB"), "nvidia-a100-sxm4-40gb");
  EXPECT_EQ(normalize_product_name(" Tesla T4 (rev a1)"), "-tesla-t4-rev-a1");
  EXPECT_EQ(cat.find_product("NVIDIA-H100-80GB-HBM3"), cat.find("H100-80GB"));
  EXPECT_EQ(cat.find_product("nvidia h100 pcie"), cat.find("H100-PCIE"));
  // No prefix stripping, no substrings: a partial or made-up name is unknown.
  for (const char* p : {"NVIDIA-H100", "H100", "A100", "NVIDIA-A100", "Tesla-P100", "NVIDIA", "T4-16GB", "L4S",
                        "NVIDIA-H100-80GB", "", "---"}) {
    EXPECT_FALSE(cat.find_product(p).has_value()) << p;
  }
}

TEST(GpuCatalog, EveryNameAndAliasIsOneModelAndRoomIsLeftForUnknownPools) {
  const auto& cat = GpuCatalog::builtin();
  std::set<std::string> keys;
  for (size_t i = 0; i < cat.builtin_size(); ++i) {
    const GpuModelSpec& s = cat.spec(static_cast<GpuModelId>(i));
    EXPECT_FALSE(s.unknown_pool);
    EXPECT_EQ(cat.find_product(s.name), static_cast<GpuModelId>(i)) << s.name;
    EXPECT_TRUE(keys.insert(normalize_product_name(s.name)).second) << s.name;
    for (const auto& a : s.aliases) {
      EXPECT_EQ(cat.find_product(a), static_cast<GpuModelId>(i)) << a;
      EXPECT_TRUE(keys.insert(normalize_product_name(a)).second) << a;
    }
    if (s.sm_count > 0) {
      EXPECT_GT(s.memory_mib, 0) << s.name;
      EXPECT_GT(s.bandwidth_gbps, 0) << s.name;
      EXPECT_GE(s.compute_capability, 60) << s.name;
    }
    EXPECT_EQ(s.mig_capable, s.max_mig_instances > 0) << s.name;
  }
  EXPECT_LE(cat.builtin_size() + 24, kMaxGpuModels);
}

TEST(GpuCatalog, UnknownPoolsAreNewModelsNamedByTheirLabel) {
  auto cat = GpuCatalog::make_builtin_copy();
  const size_t builtin = cat->builtin_size();
  auto a = cat->register_unknown("NVIDIA-TITAN-Xp", 12288);
  EXPECT_TRUE(a.created);
  EXPECT_EQ(a.id, builtin);
  EXPECT_TRUE(cat->is_unknown_pool(a.id));
  EXPECT_FALSE(cat->is_unknown_pool(*cat->find("P100")));
  const GpuModelSpec& s = cat->spec(a.id);
  EXPECT_EQ(s.name, "NVIDIA-TITAN-Xp");
  EXPECT_EQ(s.memory_mib, 12288);
  EXPECT_TRUE(s.unknown_pool);
  EXPECT_TRUE(s.inferred);
  EXPECT_EQ(s.sm_count, 0);
  EXPECT_FALSE(s.mig_capable);

  // Same label (any case, spaces for '-'): same pool, first memory kept.
  auto again = cat->register_unknown("nvidia titan xp", 11000);
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.id, a.id);
  EXPECT_EQ(again.memory_mib, 12288);

  auto b = cat->register_unknown("Quadro-RTX-8000", 0);
  EXPECT_EQ(b.id, a.id + 1);
  EXPECT_EQ(cat->unknown_pool_count(), 2u);
  EXPECT_EQ(cat->unknown_pool_names(), (std::vector<std::string>{"NVIDIA-TITAN-Xp", "Quadro-RTX-8000"}));
  EXPECT_EQ(cat->find_unknown_pool("quadro-rtx-8000"), b.id);
  // Names in pods and configs never resolve to a pool.
  EXPECT_FALSE(cat->find("Quadro-RTX-8000").has_value());
  EXPECT_FALSE(cat->find_product("Quadro-RTX-8000").has_value());
  EXPECT_EQ(cat->known_names().find("Quadro"), std::string::npos);
  EXPECT_THROW((void)cat->spec(static_cast<GpuModelId>(b.id + 1)), std::out_of_range);
  // The process-wide catalog is untouched (other tests may register there).
  cat->register_unknown("Copy-Only-GPU-Z", 0);
  EXPECT_FALSE(GpuCatalog::builtin().find_unknown_pool("Copy-Only-GPU-Z").has_value());
}

TEST(GpuCatalog, RegisterRejectsBadLabels) {
  auto cat = GpuCatalog::make_builtin_copy();
  EXPECT_THROW(cat->register_unknown("", 0), std::invalid_argument);
  EXPECT_THROW(cat->register_unknown("()", 0), std::invalid_argument);
  EXPECT_THROW(cat->register_unknown(std::string(64, 'x'), 0), std::invalid_argument);
  EXPECT_THROW(cat->register_unknown("Mystery", -1), std::invalid_argument);
  try {
    cat->register_unknown("NVIDIA-L4", 0);
    FAIL() << "a built-in product became a pool";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("built-in model L4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cat->unknown_pool_count(), 0u);
}

TEST(GpuCatalog, RegistrationStopsAtTheModelMaskWidth) {
  auto cat = GpuCatalog::make_builtin_copy();
  const size_t room = kMaxGpuModels - cat->builtin_size();
  for (size_t i = 0; i < room; ++i) cat->register_unknown("gpu-" + std::to_string(i), 1024);
  EXPECT_EQ(cat->size(), kMaxGpuModels);
  EXPECT_EQ(cat->spec(static_cast<GpuModelId>(kMaxGpuModels - 1)).name, "gpu-" + std::to_string(room - 1));
  EXPECT_EQ(model_bit(static_cast<GpuModelId>(kMaxGpuModels - 1)), ModelMask{1} << 63);
  try {
    cat->register_unknown("one-too-many", 1024);
    FAIL() << "registered past the limit";
  } catch (const std::length_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("\"one-too-many\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("64 models"), std::string::npos) << msg;
  }
  // An existing pool is still found when full.
  EXPECT_EQ(cat->register_unknown("gpu-0", 1024).id, cat->builtin_size());
  EXPECT_EQ(cat->size(), kMaxGpuModels);
}

TEST(GpuCatalog, ConcurrentRegistrationGivesOneIdPerLabel) {
  auto cat = GpuCatalog::make_builtin_copy();
  constexpr int kThreads = 4, kLabels = 12;
  std::vector<std::vector<GpuModelId>> ids(kThreads, std::vector<GpuModelId>(kLabels));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLabels; ++i) {
        const int label = (i + t * 5) % kLabels;  // threads race on the same labels in different orders
        ids[static_cast<size_t>(t)][static_cast<size_t>(label)] =
            cat->register_unknown("pool-" + std::to_string(label), 100 + label).id;
        (void)cat->unknown_pool_names();  // readers run alongside writers
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(cat->unknown_pool_count(), static_cast<size_t>(kLabels));
  for (int i = 0; i < kLabels; ++i) {
    const GpuModelId id = ids[0][static_cast<size_t>(i)];
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[static_cast<size_t>(t)][static_cast<size_t>(i)], id);
    EXPECT_EQ(cat->spec(id).name, "pool-" + std::to_string(i));
    EXPECT_EQ(cat->spec(id).memory_mib, 100 + i);
  }
}

}  // namespace
}  // namespace gpupack
