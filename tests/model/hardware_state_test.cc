// ClusterState with hardware setup: per-GPU modes, memory, bandwidth/L2
// shares, MPS limits, MIG instances and NUMA pinning; exact undo.
#include <gtest/gtest.h>

#include <random>

#include "mig/mig_geometry.h"
#include "model/cluster_state.h"

namespace gpupack {
namespace {

const GpuModelId kA100 = *GpuCatalog::builtin().find("A100-80GB");
constexpr int64_t kA100Mib = 81251;

NodeSpec node_with(std::string name, std::vector<GpuSetup> gpus, std::vector<NumaSpec> numa = {}) {
  NodeSpec n{std::move(name), 64000, 512 * 1024, static_cast<int32_t>(gpus.size()), kA100};
  n.gpus = std::move(gpus);
  n.numa = std::move(numa);
  return n;
}

GpuSetup mode(GpuMode m) {
  GpuSetup s;
  s.mode = m;
  if (m == GpuMode::kMps) s.mps_replicas = 4;
  return s;
}

Request gpu_req(int32_t milli, int64_t gpu_mem = 0) {
  Request r{1000, 1024, 1, milli, 0};
  r.gpu_memory_mib = gpu_mem;
  return r;
}

Assignment on(int node, int gpu, int32_t milli) { return {NodeId{node}, 1u << gpu, milli}; }

TEST(HardwareState, ComputeFitsButMemoryDoesNot) {
  ClusterState s({node_with("n", {mode(GpuMode::kShared)})});
  ASSERT_TRUE(s.bind(PodId{0}, gpu_req(200, 60000), on(0, 0, 200)).is_ok());
  EXPECT_EQ(s.gpu_memory_free_mib(NodeId{0}, 0), kA100Mib - 60000);
  const Status st = s.bind(PodId{1}, gpu_req(300, 30000), on(0, 0, 300));
  EXPECT_EQ(st.dimension, Dimension::kGpuMemory) << st.message;
  EXPECT_TRUE(s.bind(PodId{1}, gpu_req(300, 20000), on(0, 0, 300)).is_ok());
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, MemoryFitsButComputeDoesNot) {
  ClusterState s({node_with("n", {mode(GpuMode::kShared)})});
  ASSERT_TRUE(s.bind(PodId{0}, gpu_req(800, 1000), on(0, 0, 800)).is_ok());
  const Status st = s.bind(PodId{1}, gpu_req(300, 1000), on(0, 0, 300));
  EXPECT_EQ(st.dimension, Dimension::kGpuMilli) << st.message;
}

TEST(HardwareState, BandwidthAndL2SharesBlock) {
  ClusterState s({node_with("n", {mode(GpuMode::kShared)})});
  Request a = gpu_req(100);
  a.bandwidth_milli = 700;
  a.l2_milli = 300;
  ASSERT_TRUE(s.bind(PodId{0}, a, on(0, 0, 100)).is_ok());
  Request b = gpu_req(100);
  b.bandwidth_milli = 400;
  EXPECT_EQ(s.bind(PodId{1}, b, on(0, 0, 100)).dimension, Dimension::kGpuBandwidth);
  b.bandwidth_milli = 300;
  b.l2_milli = 800;
  EXPECT_EQ(s.bind(PodId{1}, b, on(0, 0, 100)).dimension, Dimension::kGpuL2);
  b.l2_milli = 700;
  EXPECT_TRUE(s.bind(PodId{1}, b, on(0, 0, 100)).is_ok());
  EXPECT_EQ(s.gpu_bandwidth_free_milli(NodeId{0}, 0), 0);
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, MpsLimitsAreEnforced) {
  ClusterState s({node_with("n", {mode(GpuMode::kMps)})});  // 4 replicas
  // Per-client memory limit = 81251 / 4 = 20312 MiB.
  Status st = s.bind(PodId{0}, gpu_req(250, 20313), on(0, 0, 250));
  EXPECT_EQ(st.dimension, Dimension::kGpuMemory) << st.message;
  // Thread share: at most 1000 / 4 = 250 milli (25%).
  st = s.bind(PodId{0}, gpu_req(251, 1000), on(0, 0, 251));
  EXPECT_EQ(st.dimension, Dimension::kGpuMilli) << st.message;
  for (int p = 0; p < 4; ++p) ASSERT_TRUE(s.bind(PodId{p}, gpu_req(100, 20312), on(0, 0, 100)).is_ok());
  EXPECT_EQ(s.mps_clients(NodeId{0}, 0), 4);
  // Compute (600 milli free) and memory would allow more; the client cap does not.
  st = s.bind(PodId{4}, gpu_req(10, 0), on(0, 0, 10));
  EXPECT_EQ(st.dimension, Dimension::kMpsClients) << st.message;
  ASSERT_TRUE(s.unbind(PodId{2}).is_ok());
  EXPECT_TRUE(s.bind(PodId{4}, gpu_req(10, 0), on(0, 0, 10)).is_ok());
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, MpsReplicasAboveTheClientCapAreRefused) {
  GpuSetup g = mode(GpuMode::kMps);
  g.mps_replicas = 49;
  EXPECT_THROW(ClusterState({node_with("n", {g})}), std::invalid_argument);
  NodeSpec v100{"v", 8000, 8192, 1, *GpuCatalog::builtin().find("V100M32")};
  v100.gpus = {mode(GpuMode::kMps)};
  v100.gpus[0].mps_replicas = 17;  // compute capability 7.0: at most 16 clients
  EXPECT_THROW(ClusterState({v100}), std::invalid_argument);
}

TEST(HardwareState, TimeSliceOversubscribesComputeButNotMemory) {
  GpuSetup ts = mode(GpuMode::kTimeSlice);
  ts.oversubscription = 2.0;
  ClusterState s({node_with("n", {ts})});
  for (int p = 0; p < 4; ++p) ASSERT_TRUE(s.bind(PodId{p}, gpu_req(500, 16000), on(0, 0, 500)).is_ok());
  EXPECT_EQ(s.gpu_free_milli(NodeId{0})[0], 0);  // 4 x 500 milli charged 250 each
  EXPECT_EQ(s.bind(PodId{9}, gpu_req(1, 0), on(0, 0, 1)).dimension, Dimension::kGpuMilli);
  ASSERT_TRUE(s.unbind(PodId{0}).is_ok());
  // Memory is not oversubscribed: 3 x 16000 used, 40000 more does not fit.
  EXPECT_EQ(s.bind(PodId{9}, gpu_req(100, 40000), on(0, 0, 100)).dimension, Dimension::kGpuMemory);
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, ExclusiveGpusTakeWholeGpuRequestsOnly) {
  ClusterState s({node_with("n", {mode(GpuMode::kExclusive)})});
  EXPECT_EQ(s.bind(PodId{0}, gpu_req(500), on(0, 0, 500)).dimension, Dimension::kSharingMode);
  ASSERT_TRUE(s.bind(PodId{0}, gpu_req(1000), on(0, 0, 1000)).is_ok());
  EXPECT_EQ(s.bind(PodId{1}, gpu_req(1000), on(0, 0, 1000)).dimension, Dimension::kGpuMilli);
}

TEST(HardwareState, MigInstancesAreCreatedAtValidStartsOnly) {
  ClusterState s({node_with("n", {mode(GpuMode::kMig)})});
  const MigGeometry& geo = *mig_geometry(kA100);
  Request r = gpu_req(1000);
  r.mig_profile = "3g.40gb";
  const int p3g = *geo.find("3g.40gb");
  Assignment a = on(0, 0, 1000);
  a.mig_profile = static_cast<int8_t>(p3g);
  a.mig_start = 2;  // 3g starts at 0 or 4 only
  EXPECT_EQ(s.bind(PodId{0}, r, a).dimension, Dimension::kMigSlot);
  a.mig_start = 4;
  ASSERT_TRUE(s.bind(PodId{0}, r, a).is_ok());
  EXPECT_EQ(s.gpu_free_milli(NodeId{0})[0], 500);  // 4 of 8 memory slices
  EXPECT_EQ(s.mig_state(NodeId{0}, 0)->count(p3g), 1);
  // The profile must be the one requested.
  a.mig_profile = static_cast<int8_t>(*geo.find("4g.40gb"));
  a.mig_start = 0;
  EXPECT_EQ(s.bind(PodId{1}, r, a).dimension, Dimension::kMigSlot);
  // A MIG GPU needs an instance in the assignment.
  EXPECT_EQ(s.bind(PodId{1}, r, on(0, 0, 1000)).code, Status::Code::kError);
  ASSERT_TRUE(s.unbind(PodId{0}).is_ok());
  EXPECT_TRUE(s.mig_state(NodeId{0}, 0)->empty());
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, FixedMigLayoutServesItsFreeInstances) {
  const MigGeometry& geo = *mig_geometry(kA100);
  GpuSetup g = mode(GpuMode::kMig);
  g.mig_fixed_layout = true;
  const int p1g = *geo.find("1g.10gb"), p3g = *geo.find("3g.40gb");
  g.mig_layout = {{p3g, 0}, {p1g, 4}, {p1g, 5}};
  ClusterState s({node_with("n", {g})});
  Request r = gpu_req(100);
  r.mig_profile = "1g.10gb";
  Assignment a = on(0, 0, 100);
  a.mig_profile = static_cast<int8_t>(p1g);
  a.mig_start = 6;  // valid start, but not an instance of the layout
  EXPECT_EQ(s.bind(PodId{0}, r, a).dimension, Dimension::kMigSlot);
  a.mig_start = 5;
  ASSERT_TRUE(s.bind(PodId{0}, r, a).is_ok());
  EXPECT_EQ(s.bind(PodId{1}, r, a).dimension, Dimension::kMigSlot);  // in use
  EXPECT_EQ(s.mig_busy_starts(NodeId{0}, 0), 1u << 5);
  EXPECT_EQ(s.mig_state(NodeId{0}, 0)->instance_count(), 3);  // layout unchanged
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareState, InvalidSetupsAreRefusedWithTheGpuNamed) {
  GpuSetup bad = mode(GpuMode::kMig);
  bad.mig_fixed_layout = true;
  const MigGeometry& geo = *mig_geometry(kA100);
  bad.mig_layout = {{*geo.find("4g.40gb"), 0}, {*geo.find("3g.40gb"), 0}};
  try {
    ClusterState s({node_with("n", {mode(GpuMode::kShared), bad})});
    FAIL() << "overlapping layout accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 1"), std::string::npos) << e.what();
  }
  NodeSpec t4{"t", 8000, 8192, 1, *GpuCatalog::builtin().find("T4")};
  t4.gpus = {mode(GpuMode::kMig)};
  EXPECT_THROW(ClusterState({t4}), std::invalid_argument);
  GpuSetup far = mode(GpuMode::kShared);
  far.numa = 2;
  EXPECT_THROW(ClusterState({node_with("n", {far}, {{32000, 256 * 1024}, {32000, 256 * 1024}})}),
               std::invalid_argument);
}

TEST(HardwareState, NumaPinnedPodsChargeTheirNumaNode) {
  GpuSetup g0 = mode(GpuMode::kShared), g1 = mode(GpuMode::kShared);
  g1.numa = 1;
  ClusterState s({node_with("n", {g0, g1}, {{32000, 256 * 1024}, {32000, 256 * 1024}})});
  Request r = gpu_req(1000);
  r.cpu_milli = 20000;
  r.numa_aligned = true;
  Assignment a = on(0, 1, 1000);
  a.numa = 0;  // GPU 1 is on NUMA 1
  EXPECT_EQ(s.bind(PodId{0}, r, a).dimension, Dimension::kNuma);
  a.numa = 1;
  ASSERT_TRUE(s.bind(PodId{0}, r, a).is_ok());
  EXPECT_EQ(s.numa_cpu_free_milli(NodeId{0}, 1), 12000);
  r.gpu_count = 0;
  r.gpu_milli = 0;
  Assignment cpu_only{NodeId{0}, 0, 0};
  cpu_only.numa = 1;
  EXPECT_EQ(s.bind(PodId{1}, r, cpu_only).dimension, Dimension::kNuma);
  EXPECT_TRUE(s.check_invariants().empty());
}

// Random binds and unbinds over every mode; rollback restores everything.
TEST(HardwareState, RollbackIsExactAcrossModes) {
  GpuSetup ts = mode(GpuMode::kTimeSlice);
  ts.oversubscription = 1.5;
  GpuSetup mps = mode(GpuMode::kMps), mig = mode(GpuMode::kMig), ex = mode(GpuMode::kExclusive);
  mps.numa = mig.numa = 1;
  std::vector<NodeSpec> nodes = {
      node_with("a", {mode(GpuMode::kShared), ts, mps, mig, ex}, {{32000, 256 * 1024}, {32000, 256 * 1024}})};
  ClusterState s(nodes);
  const MigGeometry& geo = *mig_geometry(kA100);
  auto snapshot = [&] {
    std::vector<int64_t> v{s.gpu_used_milli(), s.bound_pod_count(), s.cpu_free_milli(NodeId{0})};
    for (int g = 0; g < 5; ++g) {
      v.push_back(s.gpu_free_milli(NodeId{0})[g]);
      v.push_back(s.gpu_memory_free_mib(NodeId{0}, g));
      v.push_back(s.mps_clients(NodeId{0}, g));
      v.push_back(s.gpu_bandwidth_free_milli(NodeId{0}, g));
    }
    v.push_back(s.mig_state(NodeId{0}, 3)->occupied_mask());
    v.push_back(s.numa_cpu_free_milli(NodeId{0}, 0));
    v.push_back(s.numa_cpu_free_milli(NodeId{0}, 1));
    return v;
  };
  std::mt19937 rng(7);
  int next = 0;
  for (int round = 0; round < 20; ++round) {
    const auto before = snapshot();
    const auto mark = s.checkpoint();
    for (int k = 0; k < 30; ++k) {
      const int g = static_cast<int>(rng() % 5);
      Request r = gpu_req(g == 4 ? 1000 : 50 + static_cast<int32_t>(rng() % 200), rng() % 15000);
      r.bandwidth_milli = static_cast<int32_t>(rng() % 200);
      Assignment a = on(0, g, r.gpu_milli);
      if (g == 3) {
        const int p = static_cast<int>(rng() % 3);
        r.mig_profile = geo.profile(p).name;
        a.mig_profile = static_cast<int8_t>(p);
        a.mig_start = static_cast<int8_t>(rng() % 8);
      }
      if (rng() % 3 == 0) {
        r.numa_aligned = true;
        a.numa = static_cast<int8_t>(s.gpu_numa(NodeId{0}, g));
      }
      s.bind(PodId{next++}, r, a);
      if (rng() % 4 == 0) {
        auto bound = s.bound_pods();
        if (!bound.empty()) s.unbind(bound[rng() % bound.size()]);
      }
      ASSERT_TRUE(s.check_invariants().empty()) << s.check_invariants().front();
    }
    if (round % 2 == 0) {
      s.rollback(mark);
      EXPECT_EQ(snapshot(), before);
    } else {
      s.commit();
    }
    ASSERT_TRUE(s.check_invariants().empty());
  }
}

TEST(HardwareState, MigProfileByNeedIsTheSmallestThatSatisfies) {
  const MigGeometry& geo = *mig_geometry(kA100);
  Request r = gpu_req(100, 20000);
  r.mig_min_sm = 40;
  EXPECT_EQ(geo.profile(*mig_profile_for(geo, r)).name, "3g.40gb");
  r.mig_min_sm = 0;
  r.gpu_memory_mib = 15000;
  EXPECT_EQ(geo.profile(*mig_profile_for(geo, r)).name, "1g.20gb");
  r.gpu_memory_mib = 0;
  r.mig_profile = "nvidia.com/mig-2g.20gb";
  EXPECT_EQ(geo.profile(*mig_profile_for(geo, r)).name, "2g.20gb");
  r.mig_profile = "9g.99gb";
  EXPECT_FALSE(mig_profile_for(geo, r).has_value());
}

}  // namespace
}  // namespace gpupack
