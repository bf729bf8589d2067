// poolfrag on hand-built clusters where the answer follows from the rule in
// policy/poolfrag.h: the pool slack, and where it may and may not decide.
#include <gtest/gtest.h>

#include <cmath>

#include "policy/poolfrag.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kT4 = *GpuCatalog::builtin().find("T4");
const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");

std::shared_ptr<const TargetWorkload> target_of(std::vector<Request> pods) {
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 1.0));
}

// One whole GPU and one CPU, allowed on `mask` (0 = any model).
Request one_gpu(ModelMask mask) { return Request{1000, 0, 1, 1000, mask}; }

// Three one-GPU nodes: a T4 (rank 0) and two G2. The workload has as many
// T4-only as G2-only pods, so FGD and capfrag score the nodes alike for a
// pod that may go anywhere (each node's free GPU is a fragment for the one
// class that refuses its model), and the node rank decides.
TEST(PoolFrag, SendsPodsThatMayGoAnywhereToThePoolWithTheMostSlack) {
  const auto target = target_of({one_gpu(model_bit(kT4)), one_gpu(model_bit(kG2)), one_gpu(0)});
  const ClusterState s({{"t4", 32000, 0, 1, kT4}, {"g2-a", 32000, 0, 1, kG2}, {"g2-b", 32000, 0, 1, kG2}});
  // slack = capacity share / constrained demand share: T4 (1/3) / (1/3) = 1,
  // G2 (2/3) / (1/3) = 2.
  auto pool = make_policy("poolfrag", {1, target});
  auto* policy = dynamic_cast<PoolFragPolicy*>(pool.get());
  ASSERT_NE(policy, nullptr);
  EXPECT_DOUBLE_EQ(policy->pool_slack(s, kT4), 1.0);
  EXPECT_DOUBLE_EQ(policy->pool_slack(s, kG2), 2.0);
  for (const char* name : {"fgd", "capfrag"}) {
    auto p = make_policy(name, {1, target});
    EXPECT_EQ(Scheduler(*p).decide(s, one_gpu(0)).assignment.node, NodeId{0}) << name;
  }
  const Decision d = Scheduler(*pool).decide(s, one_gpu(0));
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.node, NodeId{1});
  // Allowed on both models, named: the same.
  EXPECT_EQ(Scheduler(*pool).decide(s, one_gpu(model_bit(kT4) | model_bit(kG2))).assignment.node, NodeId{1});
  // A T4-only pod has one pool: capfrag's choice.
  EXPECT_EQ(Scheduler(*pool).decide(s, one_gpu(model_bit(kT4))).assignment.node, NodeId{0});
  // A CPU-only pod is not steered (rank 0 among equal nodes).
  EXPECT_EQ(Scheduler(*pool).decide(s, Request{1000, 0, 0, 0, 0}).assignment.node, NodeId{0});
}

TEST(PoolFrag, PoolsNoConstrainedClassNeedsHaveInfiniteSlack) {
  const auto target = target_of({one_gpu(model_bit(kT4)), one_gpu(0)});
  const ClusterState s({{"t4", 32000, 0, 1, kT4}, {"g2", 32000, 0, 1, kG2}});
  PoolFragPolicy p(target);
  EXPECT_DOUBLE_EQ(p.pool_slack(s, kT4), 0.5 / 0.5);
  EXPECT_TRUE(std::isinf(p.pool_slack(s, kG2)));
}

// A model that only rare classes need (FGD's tail, outside its target's
// 95%) is still needed: its slack counts their demand, where before it was
// infinite and drew the pods that may go anywhere (openb-like traces: the
// pods bound to the G3 model failed from 26% arrived).
TEST(PoolFrag, ThePodsOfRareClassesCountInTheSlack) {
  std::vector<Request> pods(100, one_gpu(0));
  pods.push_back(one_gpu(model_bit(kT4)));
  pods.push_back(one_gpu(model_bit(kT4)));
  const auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 0.95));
  ASSERT_EQ(target->classes.size(), 1u);  // the T4-only class is in the tail
  const ClusterState s({{"t4", 32000, 0, 1, kT4}, {"g2", 32000, 0, 1, kG2}});
  PoolFragPolicy p(target);
  EXPECT_DOUBLE_EQ(p.pool_slack(s, kT4), 0.5 / (2.0 / 102));
  EXPECT_TRUE(std::isinf(p.pool_slack(s, kG2)));
}

TEST(PoolFrag, RecomputesThePoolsForAnotherClusterOfTheSameSize) {
  const auto target = target_of({one_gpu(model_bit(kT4)), one_gpu(0)});
  PoolFragPolicy p(target);
  const ClusterState one_t4({{"t4", 32000, 0, 1, kT4}, {"g2-a", 32000, 0, 1, kG2}, {"g2-b", 32000, 0, 1, kG2}});
  const ClusterState two_t4({{"t4-a", 32000, 0, 1, kT4}, {"t4-b", 32000, 0, 1, kT4}, {"g2", 32000, 0, 1, kG2}});
  EXPECT_DOUBLE_EQ(p.pool_slack(one_t4, kT4), (1.0 / 3) / 0.5);
  EXPECT_DOUBLE_EQ(p.pool_slack(two_t4, kT4), (2.0 / 3) / 0.5);
  EXPECT_DOUBLE_EQ(p.pool_slack(one_t4, kT4), (1.0 / 3) / 0.5);
}

// FGD's score comes first. The T4 node (1 GPU) cannot host the popular
// 2-GPU class anyway, a G2 node (2 GPUs) could until the pod lands there:
// FGD scores the T4 node 69 and a G2 node 37 (see fgd.h), so the pod goes to
// the T4 node although the G2 pool has more slack (8 against 2).
TEST(PoolFrag, NeverOverridesFgdsScore) {
  Request two{1000, 0, 2, 1000, 0};
  const auto target = target_of({one_gpu(model_bit(kT4)), one_gpu(model_bit(kG2)), two, two, two, two});
  const ClusterState s({{"g2-a", 32000, 0, 2, kG2}, {"t4", 32000, 0, 1, kT4}, {"g2-b", 32000, 0, 2, kG2}});
  PoolFragPolicy p(target);
  EXPECT_DOUBLE_EQ(p.pool_slack(s, kT4), 2.0);
  EXPECT_DOUBLE_EQ(p.pool_slack(s, kG2), 8.0);
  for (const char* name : {"fgd", "poolfrag"}) {
    auto policy = make_policy(name, {1, target});
    const Decision d = Scheduler(*policy).decide(s, one_gpu(0));
    ASSERT_TRUE(d.placed()) << name;
    EXPECT_EQ(d.assignment.node, NodeId{1}) << name;
  }
}

}  // namespace
}  // namespace gpupack
