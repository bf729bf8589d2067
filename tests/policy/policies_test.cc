// Each policy on small hand-built clusters where the right node and GPU are
// known from its definition.
#include <gtest/gtest.h>

#include <set>

#include "policy/gpu_choice.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");

Request shared(int64_t cpu, int32_t milli) { return {cpu, 0, 1, milli, 0}; }
Request whole(int64_t cpu, int32_t gpus) { return {cpu, 0, gpus, 1000, 0}; }

// Builds a cluster and pre-binds pods: (node, gpu mask, request).
struct Cluster {
  std::vector<NodeSpec> nodes;
  std::vector<std::tuple<int, uint32_t, Request>> pods;
  ClusterState make() const {
    ClusterState s(nodes);
    int id = 1000;
    for (const auto& [n, mask, r] : pods) {
      const Status st = s.bind(PodId{id++}, r, {NodeId{n}, mask, r.gpu_milli});
      EXPECT_TRUE(st.is_ok()) << st.message;
    }
    return s;
  }
};

Decision decide(const std::string& policy, const ClusterState& s, const Request& r,
                std::shared_ptr<const TargetWorkload> target = nullptr, uint64_t seed = 1) {
  auto p = make_policy(policy, {seed, std::move(target)});
  Scheduler sched(*p);
  return sched.decide(s, r);
}

TEST(GpuChoice, BestFitTakesTheTightestGpuAndWholeGpusTakeLowestFree) {
  const std::vector<int32_t> free = {1000, 400, 600, 1000};
  EXPECT_EQ(choose_gpus_best_fit(free, shared(0, 350)), 0b0010u);
  EXPECT_EQ(choose_gpus_best_fit(free, shared(0, 500)), 0b0100u);
  EXPECT_EQ(choose_gpus_best_fit(free, whole(0, 2)), 0b1001u);
  EXPECT_EQ(choose_gpus_first_fit(free, shared(0, 350)), 0b0001u);
  EXPECT_EQ(choose_gpus_worst_fit(free, shared(0, 350)), 0b0001u);
  EXPECT_EQ(choose_gpus_best_fit(free, whole(0, 3)), 0u);
  EXPECT_EQ(choose_gpus_best_fit(free, Request{}), 0u);
}

TEST(BestFit, PrefersTheFullerNodeAndItsTightestGpu) {
  Cluster setup{{{"empty", 64000, 0, 4, kG2}, {"busy", 64000, 0, 4, kG2}},
                {{1, 0b0001, shared(8000, 700)}, {1, 0b0010, shared(8000, 300)}}};
  const Decision d = decide("bestfit", setup.make(), shared(1000, 250));
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.node, NodeId{1});
  EXPECT_EQ(d.assignment.gpu_mask, 0b0001u);  // 300 free: the tightest fit
  EXPECT_EQ(d.score, 100);                    // normalised: best node scores 100
}

TEST(DotProduct, PrefersTheNodeWhoseFreeResourcesAlignLeast) {
  // CPU-heavy pod: the node with little free CPU but free GPUs aligns least.
  Cluster setup{{{"cpu-rich", 128000, 0, 1, kG2}, {"gpu-rich", 16000, 0, 8, kG2}}, {}};
  const Decision d = decide("dotprod", setup.make(), {8000, 0, 0, 0, 0});
  EXPECT_EQ(d.assignment.node, NodeId{1});
  // 1 - (16000/128000 * 8000/128000) / 2 -> trunc(99.6) = 99
  EXPECT_EQ(d.score, 99);
}

TEST(GpuPacking, FillsPartlyUsedGpusBeforeOpeningFreeOnes) {
  Cluster setup{{{"free", 64000, 0, 4, kG2}, {"partly", 64000, 0, 4, kG2}, {"used", 64000, 0, 4, kG2}},
                {{1, 0b0001, whole(1000, 1)}, {2, 0b0001, shared(1000, 500)}}};
  const ClusterState s = setup.make();
  const Decision d = decide("gpupacking", s, shared(1000, 400));
  EXPECT_EQ(d.assignment.node, NodeId{2});
  EXPECT_EQ(d.assignment.gpu_mask, 0b0001u);
  EXPECT_EQ(d.score, 95);  // max(100 - (500*100/1000)/10, 50)
  // A whole-GPU pod: partly used node (50 - 1 = 49) beats a free node (max(29, 4) = 29).
  const Decision w = decide("gpupacking", s, whole(1000, 1));
  EXPECT_EQ(w.assignment.node, NodeId{1});
  EXPECT_EQ(w.score, 49);
}

TEST(GpuClustering, KeepsPodsOfOneShapeTogether) {
  Cluster setup{{{"shared-pods", 64000, 0, 4, kG2}, {"whole-pods", 64000, 0, 4, kG2}, {"empty", 64000, 0, 4, kG2}},
                {{0, 0b0001, shared(1000, 500)}, {1, 0b0001, whole(1000, 1)}}};
  const ClusterState s = setup.make();
  EXPECT_EQ(decide("gpuclustering", s, shared(1000, 300)).assignment.node, NodeId{0});
  EXPECT_EQ(decide("gpuclustering", s, whole(1000, 1)).assignment.node, NodeId{1});
  EXPECT_EQ(decide("gpuclustering", s, whole(1000, 2)).assignment.node, NodeId{2});  // no 2-GPU pods anywhere
}

TEST(Fgd, PutsASharedPodWhereItStrandsTheLeast) {
  // Target: whole-GPU pods only. A 500-milli pod should fill the half-used
  // GPU (leaving whole GPUs intact), not break a whole one.
  auto target = std::make_shared<TargetWorkload>();
  target->classes.push_back({0, 1, 1000, 0, 1, 1.0});
  Cluster setup{{{"fresh", 64000, 0, 2, kG2}, {"half", 64000, 0, 2, kG2}}, {{1, 0b10, shared(0, 500)}}};
  const Decision d = decide("fgd", setup.make(), shared(1000, 500), target);
  EXPECT_EQ(d.assignment.node, NodeId{1});
  EXPECT_EQ(d.assignment.gpu_mask, 0b10u);
  EXPECT_EQ(d.score, 62);  // trunc(100 * sigmoid(500 / 1000))
}

TEST(FirstFit, TakesTheFirstFeasibleNodeInRankOrder) {
  Cluster setup{{{"a", 1000, 0, 1, kG2}, {"b", 64000, 0, 2, kG2}, {"c", 64000, 0, 2, kG2}}, {}};
  const ClusterState s = setup.make();
  auto p = make_policy("firstfit", {});
  Scheduler by_index(*p);
  EXPECT_EQ(by_index.decide(s, shared(2000, 100)).assignment.node, NodeId{1});  // a lacks CPU
  Scheduler by_rank(*p, {0, 2, 1});
  EXPECT_EQ(by_rank.decide(s, shared(2000, 100)).assignment.node, NodeId{2});
}

TEST(Spread, PrefersTheEmptiestNodeAndGpu) {
  Cluster setup{{{"busy", 64000, 1000, 2, kG2}, {"idle", 64000, 1000, 2, kG2}}, {{0, 0b01, shared(32000, 500)}}};
  const ClusterState s = setup.make();
  EXPECT_EQ(decide("spread", s, shared(1000, 100)).assignment.node, NodeId{1});
  // On the busy node alone, spread picks the freer GPU 1.
  Cluster one{{{"busy", 64000, 1000, 2, kG2}}, {{0, 0b01, shared(1000, 500)}}};
  EXPECT_EQ(decide("spread", one.make(), shared(1000, 100)).assignment.gpu_mask, 0b10u);
}

TEST(Random, PicksOnlyFeasibleNodesAndVariesWithTheSeed) {
  Cluster setup{{{"a", 64000, 0, 1, kG2}, {"full", 64000, 0, 1, kG2}, {"b", 64000, 0, 1, kG2}, {"c", 64000, 0, 1, kG2}},
                {{1, 0b1, whole(0, 1)}}};
  const ClusterState s = setup.make();
  std::set<int> chosen;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    const Decision d = decide("random", s, whole(1000, 1), nullptr, seed);
    ASSERT_TRUE(d.placed());
    chosen.insert(static_cast<int>(d.assignment.node));
  }
  EXPECT_EQ(chosen, (std::set<int>{0, 2, 3}));
}

TEST(Registry, KnowsEveryPolicyAndRefusesUnknownNames) {
  auto target = std::make_shared<TargetWorkload>();
  for (const auto& name : policy_names()) EXPECT_EQ(make_policy(name, {1, target})->name(), name);
  EXPECT_THROW(make_policy("tetris", {}), std::invalid_argument);
  EXPECT_THROW(make_policy("fgd", {}), std::invalid_argument);  // FGD needs a target
}

TEST(Scheduler, TiesGoToTheLowestRankAndFailuresNameTheDimension) {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  Cluster setup{{{"a", 64000, 0, 2, kG2}, {"b", 64000, 0, 2, kG2}, {"t4", 64000, 0, 2, t4}}, {}};
  const ClusterState s = setup.make();
  auto p = make_policy("dotprod", {});
  Scheduler sched(*p, {5, 3, 9});
  EXPECT_EQ(sched.decide(s, shared(1000, 100)).assignment.node, NodeId{1});
  const Decision too_many = sched.decide(s, whole(1000, 4));
  EXPECT_FALSE(too_many.placed());
  EXPECT_EQ(too_many.reason, Dimension::kGpuMilli);
  const Decision wrong_model = sched.decide(s, {1000, 0, 1, 1000, model_bit(*GpuCatalog::builtin().find("A10"))});
  EXPECT_EQ(wrong_model.reason, Dimension::kModel);
  EXPECT_EQ(sched.decide(s, whole(999999, 1)).reason, Dimension::kCpu);
}

TEST(Scheduler, ScheduleBindsTheDecision) {
  ClusterState s({{"a", 64000, 0, 2, kG2}});
  auto p = make_policy("bestfit", {});
  Scheduler sched(*p);
  const Decision d = sched.schedule(s, PodId{0}, shared(1000, 300));
  ASSERT_TRUE(d.placed());
  EXPECT_TRUE(s.is_bound(PodId{0}));
  EXPECT_EQ(s.gpu_used_milli(), 300);
}

}  // namespace
}  // namespace gpupack
