// Filter, in-node placement and scheduling with hardware: modes, MIG slot
// choice, NUMA alignment, NVLink/PCIe grouping, and failure reasons.
#include <gtest/gtest.h>

#include "mig/mig_geometry.h"
#include "mig/mig_layout.h"
#include "policy/gpu_choice.h"
#include "policy/registry.h"
#include "sched/filter.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kA100 = *GpuCatalog::builtin().find("A100-80GB");

GpuSetup setup(GpuMode m, int numa = 0, int nvlink = -1, int pcie = -1) {
  GpuSetup s;
  s.mode = m;
  if (m == GpuMode::kMps) s.mps_replicas = 7;
  s.numa = static_cast<int8_t>(numa);
  s.nvlink_domain = static_cast<int8_t>(nvlink);
  s.pcie_switch = static_cast<int8_t>(pcie);
  return s;
}

NodeSpec node(std::string name, std::vector<GpuSetup> gpus, std::vector<NumaSpec> numa = {}) {
  NodeSpec n{std::move(name), 128000, 1024 * 1024, static_cast<int32_t>(gpus.size()), kA100};
  n.gpus = std::move(gpus);
  n.numa = std::move(numa);
  return n;
}

// 8 GPUs: NVLink domains {0-3} and {4-7}; PCIe switches of two GPUs each;
// NUMA 0 holds GPUs 0-3, NUMA 1 GPUs 4-7.
NodeSpec hgx(std::string name) {
  std::vector<GpuSetup> gpus;
  for (int g = 0; g < 8; ++g) gpus.push_back(setup(GpuMode::kShared, g / 4, g / 4, g / 2));
  return node(std::move(name), gpus, {{64000, 512 * 1024}, {64000, 512 * 1024}});
}

Request whole(int gpus, int64_t cpu = 1000) { return {cpu, 1024, gpus, 1000, 0}; }

Request mig(const std::string& profile) {
  Request r{1000, 1024, 1, 100, 0};
  r.mig_profile = profile;
  return r;
}

Decision schedule(ClusterState& s, Scheduler& sched, int pod, const Request& r) {
  return sched.schedule(s, PodId{pod}, r);
}

TEST(HardwareScheduler, FourGpuRequestLandsInOneNvlinkDomain) {
  ClusterState s({hgx("n")});
  // GPU 1 is partly used: domain {0-3} no longer has 4 whole GPUs.
  ASSERT_TRUE(s.bind(PodId{0}, {1000, 0, 1, 300, 0}, {NodeId{0}, 0b10, 300}).is_ok());
  const Placement p = choose_placement(s, NodeId{0}, whole(4));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.assignment.gpu_mask, 0xF0u);
  // With both domains free, a 4-GPU request takes a whole domain.
  ClusterState fresh({hgx("m")});
  const Placement q = choose_placement(fresh, NodeId{0}, whole(4));
  EXPECT_TRUE(q.assignment.gpu_mask == 0x0Fu || q.assignment.gpu_mask == 0xF0u) << q.assignment.gpu_mask;
  // A 2-GPU request prefers one NVLink domain and, inside it, one PCIe switch.
  Request two = whole(2);
  two.gpu_scope = GpuScope::kPcieSwitch;
  const Placement t = choose_placement(s, NodeId{0}, two);
  ASSERT_TRUE(t.ok());
  const uint32_t m = t.assignment.gpu_mask;
  EXPECT_TRUE(m == 0b1100u || m == 0x30u || m == 0xC0u) << m;
}

TEST(HardwareScheduler, RequiredNvlinkScopeFailsWithTopology) {
  ClusterState s({hgx("n")});
  ASSERT_TRUE(s.bind(PodId{0}, {1000, 0, 1, 300, 0}, {NodeId{0}, 0b10, 300}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, {1000, 0, 1, 300, 0}, {NodeId{0}, 0b100000, 300}).is_ok());
  Request r = whole(4);
  r.gpu_scope = GpuScope::kNvlink;
  r.scope_required = false;
  EXPECT_TRUE(choose_placement(s, NodeId{0}, r).ok());  // preferred only: spans domains
  r.scope_required = true;
  std::string why;
  const Placement p = choose_placement(s, NodeId{0}, r, {}, &why);
  EXPECT_EQ(p.failed, Dimension::kTopology) << why;
  EXPECT_NE(why.find("nvlink"), std::string::npos) << why;
  auto policy = make_policy("bestfit", {});
  Scheduler sched(*policy);
  EXPECT_EQ(sched.decide(s, r).reason, Dimension::kTopology);
  EXPECT_EQ(explain_fit(s, NodeId{0}, r).dimension, Dimension::kTopology);
}

TEST(HardwareScheduler, NumaAlignedRequestsNeverStraddle) {
  ClusterState s({hgx("n")});
  Request r = whole(2, 40000);
  r.numa_aligned = true;
  auto policy = make_policy("firstfit", {});
  Scheduler sched(*policy);
  // Each placement's GPUs sit on its NUMA node, which pays the CPUs.
  std::vector<int> numa_used;
  for (int p = 0; p < 2; ++p) {
    const Decision d = schedule(s, sched, p, r);
    ASSERT_TRUE(d.placed()) << p;
    const int u = d.assignment.numa;
    ASSERT_GE(u, 0);
    numa_used.push_back(u);
    for (int g = 0; g < 8; ++g) {
      if ((d.assignment.gpu_mask >> g) & 1u) {
        EXPECT_EQ(s.gpu_numa(NodeId{0}, g), u);
      }
    }
  }
  EXPECT_NE(numa_used[0], numa_used[1]);
  // 48000 cpu milli are free on the node, but 24000 on each NUMA node: a
  // third aligned pod would straddle, so it fails and says why.
  const Decision d = sched.decide(s, r);
  EXPECT_FALSE(d.placed());
  EXPECT_EQ(d.reason, Dimension::kNuma);
  EXPECT_EQ(explain_fit(s, NodeId{0}, r).dimension, Dimension::kNuma);
  Request loose = r;
  loose.numa_aligned = false;
  EXPECT_TRUE(sched.decide(s, loose).placed());
  Request small = whole(1, 20000);
  small.numa_aligned = true;
  EXPECT_TRUE(schedule(s, sched, 5, small).placed());
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(HardwareScheduler, NumaAlignmentFailsWhenGpusAndCpusAreOnDifferentNodes) {
  ClusterState s({hgx("n")});
  // NUMA 1's CPUs are taken by a pinned CPU-only pod.
  Request cpu{60000, 1024, 0, 0, 0};
  cpu.numa_aligned = true;
  Assignment a{NodeId{0}, 0, 0};
  a.numa = 1;
  ASSERT_TRUE(s.bind(PodId{0}, cpu, a).is_ok());
  // GPUs 0-3 (NUMA 0) are busy.
  for (int g = 0; g < 4; ++g) ASSERT_TRUE(s.bind(PodId{1 + g}, whole(1), {NodeId{0}, 1u << g, 1000}).is_ok());
  Request r = whole(1, 10000);
  r.numa_aligned = true;
  std::string why;
  const Placement p = choose_placement(s, NodeId{0}, r, {}, &why);
  EXPECT_FALSE(p.ok());
  Request loose = whole(1, 10000);
  EXPECT_TRUE(choose_placement(s, NodeId{0}, loose).ok());
}

TEST(HardwareScheduler, MigAwareChoiceKeepsTheLargeProfilePlaceable) {
  const MigGeometry& geo = *mig_geometry(kA100);
  for (const MigSlotRule rule : {MigSlotRule::kFirstFree, MigSlotRule::kMigAware}) {
    ClusterState s({node("n", {setup(GpuMode::kMig)})});
    auto policy = make_policy("firstfit", {});
    Scheduler sched(*policy);
    sched.set_placement_options({rule});
    for (int p = 0; p < 3; ++p) ASSERT_TRUE(schedule(s, sched, p, mig("1g.10gb")).placed());
    const MigGpuState& st = *s.mig_state(NodeId{0}, 0);
    const bool four_fits = st.can_place_anywhere(*geo.find("4g.40gb"));
    if (rule == MigSlotRule::kFirstFree) {
      EXPECT_EQ(st.occupied_mask(), 0b111u);
      EXPECT_FALSE(four_fits);
      EXPECT_EQ(sched.decide(s, mig("4g.40gb")).reason, Dimension::kMigSlot);
    } else {
      EXPECT_TRUE(four_fits) << format_layout(st);
      EXPECT_TRUE(schedule(s, sched, 9, mig("4g.40gb")).placed());
    }
    EXPECT_TRUE(s.check_invariants().empty());
  }
}

TEST(HardwareScheduler, MigByNeedAndReasons) {
  ClusterState s({node("n", {setup(GpuMode::kMig)})});
  auto policy = make_policy("bestfit", {});
  Scheduler sched(*policy);
  Request r{1000, 1024, 1, 100, 0};
  r.gpu_memory_mib = 30000;  // -> 3g.40gb on A100-80GB (smallest with >= 30000 MiB)
  r.mig_min_sm = 1;
  const Decision d = schedule(s, sched, 0, r);
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(mig_geometry(kA100)->profile(d.assignment.mig_profile).name, "3g.40gb");
  const Decision e = schedule(s, sched, 1, r);
  ASSERT_TRUE(e.placed());
  EXPECT_EQ(sched.decide(s, r).reason, Dimension::kMigSlot);
  // A plain fractional request is refused by the MIG GPU with sharing_mode.
  EXPECT_EQ(sched.decide(s, Request{1000, 1024, 1, 100, 0}).reason, Dimension::kSharingMode);
}

TEST(HardwareScheduler, WorkloadClassPicksTheMode) {
  // GPU 0 MPS, GPU 1 MIG, GPU 2 exclusive, GPU 3 time-slice.
  std::vector<GpuSetup> gpus = {setup(GpuMode::kMps), setup(GpuMode::kMig), setup(GpuMode::kExclusive),
                                setup(GpuMode::kTimeSlice)};
  ClusterState s({node("n", gpus)});
  Request latency{1000, 1024, 1, 140, 0};
  latency.workload_class = WorkloadClass::kLatencySensitive;
  latency.gpu_memory_mib = 9000;
  Placement p = choose_placement(s, NodeId{0}, latency);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.assignment.gpu_mask, 0b10u);  // MIG (exclusive would need a whole GPU)
  Request bursty = latency;
  bursty.workload_class = WorkloadClass::kBurstyInference;
  p = choose_placement(s, NodeId{0}, bursty);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.assignment.gpu_mask == 0b1u || p.assignment.gpu_mask == 0b1000u);
  Request training{1000, 1024, 1, 1000, 0};
  training.workload_class = WorkloadClass::kTraining;
  p = choose_placement(s, NodeId{0}, training);
  ASSERT_TRUE(p.ok());
  // Exclusive GPU 2, or a 7g instance on the MIG GPU: both leave nothing.
  EXPECT_TRUE(p.assignment.gpu_mask == 0b100u || p.assignment.gpu_mask == 0b10u);
  // A used GPU is preferred over an idle one: after one MPS client, the next
  // bursty request joins it rather than opening the time-sliced GPU.
  ASSERT_TRUE(s.bind(PodId{0}, bursty, {NodeId{0}, 0b1u, bursty.gpu_milli}).is_ok());
  p = choose_placement(s, NodeId{0}, bursty);
  EXPECT_EQ(p.assignment.gpu_mask, 0b1u);
}

TEST(HardwareScheduler, GpuMemoryReasonIsReported) {
  ClusterState s({node("n", {setup(GpuMode::kShared)})});
  Request r{1000, 1024, 1, 100, 0};
  r.gpu_memory_mib = 90000;  // more than an A100-80GB holds
  auto policy = make_policy("fgd", {42, std::make_shared<TargetWorkload>()});
  Scheduler sched(*policy);
  EXPECT_EQ(sched.decide(s, r).reason, Dimension::kGpuMemory);
  EXPECT_FALSE(fits(s, NodeId{0}, r));
  EXPECT_EQ(explain_fit(s, NodeId{0}, r).dimension, Dimension::kGpuMemory);
}

TEST(HardwareScheduler, FgdScoresMigNodesWithTheMigMeasure) {
  // Two MIG nodes; node b already holds a 4g instance. FGD (MIG-aware
  // measure) puts a 3g.40gb next to it (no new stranding) rather than
  // opening node a's empty GPU, where a 3g at 0 or 4 blocks 4g/7g.
  ClusterState s({node("a", {setup(GpuMode::kMig)}), node("b", {setup(GpuMode::kMig)})});
  const MigGeometry& geo = *mig_geometry(kA100);
  Assignment a{NodeId{1}, 1, 100};
  a.mig_profile = static_cast<int8_t>(*geo.find("4g.40gb"));
  a.mig_start = 0;
  ASSERT_TRUE(s.bind(PodId{0}, mig("4g.40gb"), a).is_ok());
  auto policy = make_policy("fgd", {42, std::make_shared<TargetWorkload>()});
  Scheduler sched(*policy);
  const Decision d = sched.decide(s, mig("3g.40gb"));
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.node, NodeId{1});
  EXPECT_EQ(d.assignment.mig_start, 4);
}

}  // namespace
}  // namespace gpupack
