#include "frag/fgd.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

const GpuModelId kT4 = *GpuCatalog::builtin().find("T4");
const GpuModelId kV100 = *GpuCatalog::builtin().find("V100M32");

TargetWorkload two_classes() {
  TargetWorkload w;
  w.classes.push_back({1000, 1, 500, 0, 1, 0.5});  // one GPU, half of it
  w.classes.push_back({2000, 0, 0, 0, 1, 0.5});    // CPU-only
  return w;
}

TEST(FgdFragmentation, CountsFreeGpuMilliThatTheTargetCannotUse) {
  const TargetWorkload w = two_classes();
  const std::vector<int32_t> free = {300, 1000};
  // Half GPU class: GPU 1 can host it, GPU 0's 300 milli cannot -> 300.
  // CPU-only class: every free GPU milli is unusable -> 1300.
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kT4, 4000, free), 0.5 * 300 + 0.5 * 1300);
  // Too little CPU for the GPU class: the whole 1300 counts for it too.
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kT4, 500, free), 1300);
  // No GPU with 500 free: unusable for both classes.
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kT4, 4000, std::vector<int32_t>{300, 400}), 700);
  // A fully used node has nothing to strand.
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kT4, 4000, std::vector<int32_t>{0, 0}), 0);
}

TEST(FgdFragmentation, ModelNotAllowedMakesTheNodeUnusableForThatClass) {
  TargetWorkload w;
  w.classes.push_back({0, 1, 1000, model_bit(kV100), 1, 1.0});
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kT4, 1000, std::vector<int32_t>{1000, 1000}), 2000);
  EXPECT_DOUBLE_EQ(node_fragmentation_milli(w, kV100, 1000, std::vector<int32_t>{1000, 1000}), 0);
}

TEST(FgdTargetWorkload, KeepsTheMostPopularClassesUpToCoverage) {
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back({1000, 0, 1, 500, 0});  // 60%
  for (int i = 0; i < 3; ++i) reqs.push_back({2000, 0, 0, 0, 0});    // 30%
  reqs.push_back({4000, 0, 1, 1000, 0});                             // 10%
  const auto w = TargetWorkload::from_requests(reqs, {}, 0.85);
  ASSERT_EQ(w.classes.size(), 2u);  // 60% + 30% reaches 85%
  EXPECT_EQ(w.classes[0].gpu_milli, 500);
  EXPECT_DOUBLE_EQ(w.classes[0].popularity, (0.6) / (0.9));
  EXPECT_NEAR(w.classes[0].popularity + w.classes[1].popularity, 1.0, 1e-12);
  // The class past the cut is kept aside, with its count and no popularity.
  ASSERT_EQ(w.tail.size(), 1u);
  EXPECT_EQ(w.tail[0].gpu_milli, 1000);
  EXPECT_EQ(w.tail[0].cpu_milli, 4000);
  EXPECT_EQ(w.tail[0].count, 1);
  EXPECT_EQ(w.tail[0].popularity, 0.0);
  EXPECT_TRUE(TargetWorkload::from_requests(reqs, {}, 1.0).tail.empty());
  // Memory is not part of a class.
  reqs.push_back({1000, 99999, 1, 500, 0});
  EXPECT_EQ(TargetWorkload::from_requests(reqs, {}, 1.0).classes[0].count, 7);
}

TEST(FgdTracker, FollowsChangedNodesOnly) {
  const TargetWorkload w = two_classes();
  ClusterState s({{"a", 8000, 1000, 2, kT4}, {"b", 8000, 1000, 2, kT4}});
  FragTracker t(w, s);
  EXPECT_DOUBLE_EQ(t.total_milli(), cluster_fragmentation_milli(w, s));
  ASSERT_TRUE(s.bind(PodId{0}, {1000, 0, 1, 700, 0}, {NodeId{1}, 1, 700}).is_ok());
  t.refresh(s, NodeId{1});
  EXPECT_DOUBLE_EQ(t.total_milli(), cluster_fragmentation_milli(w, s));
  EXPECT_DOUBLE_EQ(t.node_milli(NodeId{1}), node_fragmentation_milli(w, s, NodeId{1}));
}

}  // namespace
}  // namespace gpupack
