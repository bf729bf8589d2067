// The repack bound of frag/cluster_metrics.h: the GPUs in use, the bound
// pods' GPU items, and what no repack of them gets past (hand-solved
// clusters), and no bound where a pod's charge depends on its GPU.
#include "frag/cluster_metrics.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

const GpuModelId kA100 = *GpuCatalog::builtin().find("A100-80GB");

NodeSpec plain_node(std::string name, int gpus) { return {std::move(name), 64000, 512 * 1024, gpus, kA100}; }
Request gpu_req(int32_t gpus, int32_t milli) { return {1000, 1024, gpus, milli, 0}; }
Assignment on(int node, uint32_t mask, int32_t milli) { return {NodeId{node}, mask, milli}; }

ClusterMetrics metrics_of(const ClusterState& s) { return cluster_metrics(s, TargetWorkload{}, {}); }

TEST(RepackBound, HalvesSpreadOverTwoGpusFreeOneAndWholeGpusNone) {
  ClusterState s({plain_node("a", 4), plain_node("b", 2)});
  ASSERT_TRUE(s.bind(PodId{0}, gpu_req(1, 500), on(0, 0b0001, 500)).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, gpu_req(1, 500), on(1, 0b01, 500)).is_ok());
  ASSERT_TRUE(s.bind(PodId{2}, gpu_req(2, 1000), on(0, 0b1100, 1000)).is_ok());
  ASSERT_TRUE(s.bind(PodId{3}, Request{2000, 0, 0, 0, 0}, on(1, 0, 0)).is_ok());  // CPU only: no item
  const ClusterMetrics m = metrics_of(s);
  EXPECT_EQ(m.gpu_total, 6);
  EXPECT_EQ(m.gpus_in_use, 4);
  ASSERT_TRUE(m.bound_gpu_items.has_value());
  EXPECT_EQ(*m.bound_gpu_items, (std::vector<std::pair<int32_t, double>>{{500, 2}, {1000, 2}}));
  const auto r = repack_bound(m);
  ASSERT_TRUE(r.has_value());
  // The two halves fit one GPU: 3 GPUs hold everything, 4 are in use.
  EXPECT_NEAR(r->freeable_gpus, 1.0, 1e-6);
  EXPECT_NEAR(r->size_waste_gpus, 0.0, 1e-6);
}

TEST(RepackBound, SizesThatCannotShareAGpuForceTheirWaste) {
  // Three 600s: no two share a GPU, so nothing is freeable and 3 x 400 is waste.
  ClusterState s({plain_node("a", 4)});
  for (int p = 0; p < 3; ++p) ASSERT_TRUE(s.bind(PodId{p}, gpu_req(1, 600), on(0, 1u << p, 600)).is_ok());
  auto r = repack_bound(metrics_of(s));
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->freeable_gpus, 0.0, 1e-6);
  EXPECT_NEAR(r->size_waste_gpus, 1.2, 1e-6);

  // Four 470s on four GPUs pack two by two: 2 GPUs freeable, 2 x 60 milli waste.
  ClusterState t({plain_node("a", 4)});
  for (int p = 0; p < 4; ++p) ASSERT_TRUE(t.bind(PodId{p}, gpu_req(1, 470), on(0, 1u << p, 470)).is_ok());
  r = repack_bound(metrics_of(t));
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->freeable_gpus, 2.0, 1e-6);
  EXPECT_NEAR(r->size_waste_gpus, 0.12, 1e-6);
}

TEST(RepackBound, AnEmptyClusterHasNothingToRepack) {
  ClusterState s({plain_node("a", 2)});
  const ClusterMetrics m = metrics_of(s);
  EXPECT_EQ(m.gpus_in_use, 0);
  const auto r = repack_bound(m);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->freeable_gpus, 0.0);
  EXPECT_EQ(r->size_waste_gpus, 0.0);
}

TEST(RepackBound, NoneWhereAPodsChargeDependsOnItsGpu) {
  // A time-slicing GPU charges less than the milli: a repack onto it could
  // free more than sizes say, so there is no bound, even with no pod on it.
  NodeSpec ts = plain_node("ts", 1);
  GpuSetup slice;
  slice.mode = GpuMode::kTimeSlice;
  slice.oversubscription = 2.0;
  ts.gpus = {slice};
  ClusterState s({plain_node("a", 2), ts});
  ASSERT_TRUE(s.bind(PodId{0}, gpu_req(1, 500), on(0, 0b01, 500)).is_ok());
  ClusterMetrics m = metrics_of(s);
  EXPECT_FALSE(m.bound_gpu_items.has_value());
  EXPECT_FALSE(repack_bound(m).has_value());

  // A pod taking advertised MIG devices.
  NodeSpec mig = plain_node("mig", 0);
  mig.mig_devices = {{"1g.10gb", 7}};
  ClusterState t({plain_node("a", 2), mig});
  ASSERT_TRUE(t.bind(PodId{0}, gpu_req(1, 500), on(0, 0b01, 500)).is_ok());
  m = metrics_of(t);
  ASSERT_TRUE(m.bound_gpu_items.has_value());  // devices advertised, none taken yet
  Request r{1000, 1024, 0, 0, 0};
  r.mig_devices = {{"1g.10gb", 2}};
  ASSERT_TRUE(t.bind(PodId{1}, r, on(1, 0, 0)).is_ok());
  m = metrics_of(t);
  EXPECT_FALSE(m.bound_gpu_items.has_value());
  EXPECT_FALSE(repack_bound(m).has_value());
}

TEST(RepackBound, HardwareFieldsThatDoNotChangeTheChargeKeepTheBound) {
  // GPU memory is checked but charges nothing: the items stay the milli.
  ClusterState s({plain_node("a", 2)});
  Request r = gpu_req(1, 400);
  r.gpu_memory_mib = 20000;
  ASSERT_TRUE(s.bind(PodId{0}, r, on(0, 0b01, 400)).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, r, on(0, 0b10, 400)).is_ok());
  const auto b = repack_bound(metrics_of(s));
  ASSERT_TRUE(b.has_value());
  EXPECT_NEAR(b->freeable_gpus, 1.0, 1e-6);
  EXPECT_NEAR(b->size_waste_gpus, 0.2, 1e-6);
}

}  // namespace
}  // namespace gpupack
