// capfrag and its measure on hand-built nodes where the answer follows from
// the definitions in frag/capacity_frag.h and policy/capfrag.h.
#include <gtest/gtest.h>

#include <random>

#include "frag/capacity_frag.h"
#include "policy/capfrag.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");

std::shared_ptr<const TargetWorkload> target_of(std::vector<Request> pods) {
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 1.0));
}

TEST(CapacityFragmentation, CountsGpusThatCpuStrandsAfterTheFirstPod) {
  const auto target = target_of({{8000, 0, 1, 1000, 0}});  // one class: 8 CPUs, 1 GPU
  const auto w = class_weights(*target, ClassWeight::kPods);
  ASSERT_EQ(w, std::vector<int64_t>{1});
  const std::vector<int32_t> free(8, 1000);
  // CPU for 3 pods: 5 of the 8 free GPUs are stranded; FGD's one-pod test sees none.
  EXPECT_EQ(capacity_fragmentation(*target, w, kG2, 24000, free), 5000);
  EXPECT_EQ(capacity_fragmentation(*target, w, kG2, 24000, free, /*one_pod=*/true), 0);
  EXPECT_EQ(capacity_fragmentation(*target, w, kG2, 24000, free, false, /*cpu_capacity=*/false), 0);
  // No CPU for even one pod: everything is stranded either way.
  EXPECT_EQ(capacity_fragmentation(*target, w, kG2, 7000, free), 8000);
  EXPECT_EQ(capacity_fragmentation(*target, w, kG2, 7000, free, true), 8000);
}

TEST(CapacityFragmentation, SharedClassesStrandTheRemainderOfEachGpu) {
  const auto target = target_of({{0, 0, 1, 470, 0}, {0, 0, 1, 470, 0}, {0, 0, 1, 810, 0}});
  const auto pods = class_weights(*target, ClassWeight::kPods);
  const auto demand = class_weights(*target, ClassWeight::kDemand);
  EXPECT_EQ(pods, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(demand, (std::vector<int64_t>{940, 810}));
  const std::vector<int32_t> fresh = {1000};
  // 470: two pods, 60 left; 810: one pod, 190 left.
  EXPECT_EQ(capacity_fragmentation(*target, pods, kG2, 64000, fresh), 2 * 60 + 1 * 190);
  EXPECT_EQ(capacity_fragmentation(*target, demand, kG2, 64000, fresh), 940 * 60 + 810 * 190);
  const std::vector<int32_t> half = {530};  // 470: one more pod (60 left); 810: none (530)
  EXPECT_EQ(capacity_fragmentation(*target, pods, kG2, 64000, half), 2 * 60 + 530);
  EXPECT_EQ(capacity_fragmentation(*target, pods, kG2, 64000, std::vector<int32_t>{0, 0}), 0);
}

TEST(CapFrag, BreaksFgdTiesAwayFromNodesWhoseCpuWouldStrandGpus) {
  const auto target = target_of({{10000, 0, 1, 1000, 0}});
  // Both nodes: 4 free GPUs. Node 0 has CPU for 4 such pods, node 1 for 10.
  const ClusterState s({{"tight", 40000, 0, 4, kG2}, {"roomy", 100000, 0, 4, kG2}});
  const Request cpu_only{20000, 0, 0, 0, 0};
  // FGD: one pod of the class still fits on both, dF = 0: a tie, node rank 0 wins.
  auto fgd = make_policy("fgd", {1, target});
  EXPECT_EQ(Scheduler(*fgd).decide(s, cpu_only).assignment.node, NodeId{0});
  // capfrag: on node 0 the pod would strand 2 GPUs (CPU for 2 pods left), on node 1 none.
  auto cap = make_policy("capfrag", {1, target});
  const Decision d = Scheduler(*cap).decide(s, cpu_only);
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.node, NodeId{1});
  const auto* policy = dynamic_cast<const CapFragPolicy*>(cap.get());
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->node_stranded(s, NodeId{0}), 0);
}

TEST(CapFrag, KeepsFgdsOrderWhenFgdScoresDiffer) {
  // One class of 2 whole GPUs. Node 0 has 2 free GPUs, node 1 has 3: a
  // 1-GPU pod on node 1 leaves 2 free (dF = 0) and on node 0 leaves 1
  // (dF < 0: the class no longer fits), so both policies take node 1.
  const auto target = target_of({{1000, 0, 2, 1000, 0}});
  const ClusterState s({{"two", 64000, 0, 2, kG2}, {"three", 64000, 0, 3, kG2}});
  const Request one{1000, 0, 1, 1000, 0};
  for (const char* name : {"fgd", "capfrag"}) {
    auto p = make_policy(name, {1, target});
    const Decision d = Scheduler(*p).decide(s, one);
    ASSERT_TRUE(d.placed()) << name;
    EXPECT_EQ(d.assignment.node, NodeId{1}) << name;
  }
}

TEST(CapFrag, SharedPodTakesTheGpuThatStrandsLeast) {
  // Classes 470 (x2) and a whole GPU: a 470 pod on the GPU with 530 free
  // leaves 60; on the fresh GPU it would take the only slot of a whole-GPU pod.
  const auto target = target_of({{0, 0, 1, 470, 0}, {0, 0, 1, 470, 0}, {0, 0, 1, 1000, 0}});
  ClusterState s({{"n", 64000, 0, 2, kG2}});
  ASSERT_TRUE(s.bind(PodId{1}, {0, 0, 1, 470, 0}, {NodeId{0}, 0b10, 470}).is_ok());
  auto p = make_policy("capfrag", {1, target});
  const Decision d = Scheduler(*p).decide(s, {0, 0, 1, 470, 0});
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.gpu_mask, 0b10u);
}

TEST(CapFrag, AblationVariantsAreDistinctCapFragPolicies) {
  const auto target = target_of({{1000, 0, 1, 1000, 0}});
  for (const PolicyInfo& info : capfrag_ablation()) {
    EXPECT_TRUE(info.name.starts_with("capfrag-") || info.name.starts_with("dualfrag-")) << info.name;
    EXPECT_TRUE(info.uses_target) << info.name;
    auto p = info.make({1, target});
    EXPECT_EQ(p->name(), info.name);
  }
}

TEST(CapFrag, RequiresATargetWorkload) { EXPECT_THROW(make_policy("capfrag", {1, nullptr}), std::invalid_argument); }

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

TEST(CapacityFragmentation, OnePassPairEqualsTheTwoMeasures) {
  const auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(
      std::vector<Request>{{8000, 0, 1, 1000, 0}, {2000, 0, 1, 470, 0}, {4000, 0, 2, 1000, 0}, {1000, 0, 0, 0, 0}}, {},
      1.0));
  const auto w = class_weights(*target, ClassWeight::kPods);
  const std::vector<int32_t> free = {1000, 530, 1000, 60};
  for (int64_t cpu : {0, 3000, 9000, 64000}) {
    const StrandedPair p = stranded_pair(*target, w, kG2, cpu, free);
    EXPECT_EQ(p.capacity, capacity_fragmentation(*target, w, kG2, cpu, free)) << cpu;
    EXPECT_EQ(p.one_pod, capacity_fragmentation(*target, w, kG2, cpu, free, true, false)) << cpu;
  }
}

TEST(CapacityFragmentation, TheGroupedEvaluatorEqualsThePairOnRandomNodes) {
  // Classes sharing GPU count, milli and models (differing in CPU) form one
  // group; the result must not change, for any node state or model.
  std::mt19937 rng(11);
  const GpuModelId kT4 = *GpuCatalog::builtin().find("T4");
  std::vector<Request> pods;
  for (int i = 0; i < 60; ++i) {
    const int32_t count = rng() % 5 == 0 ? static_cast<int32_t>(1 + rng() % 4) : 1;
    const int32_t milli = count > 1 || rng() % 3 == 0 ? 1000 : static_cast<int32_t>(100 + 10 * (rng() % 80));
    const ModelMask models = rng() % 4 == 0 ? model_bit(kT4) : 0;
    pods.push_back({static_cast<int64_t>(1000 * (rng() % 4)), 0, rng() % 10 == 0 ? 0 : count, milli, models});
  }
  const TargetWorkload target = TargetWorkload::from_requests(pods, {}, 1.0);
  for (ClassWeight weight : {ClassWeight::kPods, ClassWeight::kDemand}) {
    const auto w = class_weights(target, weight);
    const StrandedPairEvaluator grouped(target, w);
    for (int round = 0; round < 300; ++round) {
      std::vector<int32_t> free(1 + rng() % 8);
      for (int32_t& f : free) f = rng() % 3 == 0 ? 1000 : static_cast<int32_t>(rng() % 1001);
      // Beyond one GPU (never in a ClusterState): the evaluator's shortcuts
      // for 0..1000 milli must give way to the plain division.
      if (round % 10 == 9) free[0] = static_cast<int32_t>(1001 + rng() % 3000);
      const int64_t cpu = static_cast<int64_t>(rng() % 20000);
      const GpuModelId model = rng() % 2 == 0 ? kG2 : kT4;
      const StrandedPair a = grouped(model, cpu, free), b = stranded_pair(target, w, model, cpu, free);
      ASSERT_EQ(a.capacity, b.capacity) << round;
      ASSERT_EQ(a.one_pod, b.one_pod) << round;
    }
  }
}

}  // namespace
}  // namespace gpupack
