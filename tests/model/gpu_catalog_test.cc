#include "model/gpu_catalog.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

TEST(GpuCatalog, FindsOpenbAndProductNamesIgnoringCase) {
  const auto& cat = GpuCatalog::builtin();
  auto v100 = cat.find("V100M32");
  ASSERT_TRUE(v100.has_value());
  EXPECT_EQ(cat.find("tesla v100-sxm2-32gb"), v100);
  EXPECT_EQ(cat.spec(*v100).sm_count, 80);
  for (const char* name : {"P100", "T4", "V100M16", "A10", "G1", "G2", "G3", "A100-40GB", "A100-80GB",
                           "H100-80GB", "H200", "L4", "L40S", "A30"}) {
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
}

}  // namespace
}  // namespace gpupack
