// Hand-made clusters where the right defrag plan is known, one per kind of
// move the planner must find on openb-like states.
#include <gtest/gtest.h>

#include "defrag/plan.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"

namespace gpupack {
namespace {

using testing::shared;
using testing::whole;

void expect_valid(const ClusterState& s, const DefragPlan& plan, const DefragGoal& goal,
                  const DefragBudget& budget = {}) {
  const auto errors = validate_plan(s, plan, goal, budget, {});
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
}

TEST(DefragPlannerMoves, SmallPodMovesOntoASliverOfAnotherNodeToClearAGpu) {
  // Node a: GPU 0 holds an 810-milli pod (190 left). Node b: its only GPU
  // holds a 150-milli pod. The whole-GPU pod needs more CPU than a has.
  ClusterState s({{"a", 6000, 65536, 1, 0}, {"b", 16000, 65536, 1, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, shared(810, 4000), {NodeId{0}, 0b1, 810}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, shared(150, 1000), {NodeId{1}, 0b1, 150}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{2}, whole(1, 8000)}};
  DefragBudget budget;
  budget.max_moves = 1;
  const DefragPlan plan = plan_defrag(s, goal, budget, {});
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].pod, PodId{1});
  EXPECT_EQ(plan.steps[0].kind, MoveKind::kEvict);
  EXPECT_EQ(plan.steps[0].to.node, NodeId{0});
  EXPECT_EQ(plan.steps[1].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps[1].to.node, NodeId{1});
  EXPECT_EQ(plan.after.used_gpu_milli, 1960);
  expect_valid(s, plan, goal, budget);
}

TEST(DefragPlannerMoves, SmallPodRemapsOntoASliverInsideTheNode) {
  // One node: GPU 0 has an 810 pod, GPU 1 a 150 pod. Remapping the small pod
  // onto GPU 0's sliver frees GPU 1 with no CPU or memory change.
  ClusterState s({{"a", 32000, 65536, 2, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, shared(810), {NodeId{0}, 0b01, 810}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, shared(150), {NodeId{0}, 0b10, 150}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{2}, whole(1)}};
  const DefragPlan plan = plan_defrag(s, goal, {}, {});
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].kind, MoveKind::kRemap);
  EXPECT_EQ(plan.steps[0].to.gpu_mask, 0b01u);
  EXPECT_EQ(plan.steps[1].to.gpu_mask, 0b10u);
  expect_valid(s, plan, goal);
}

TEST(DefragPlannerMoves, CpuHeavyGpuPodMovesWhereCpuIsSpare) {
  // Node a has a free GPU but a whole-GPU pod holds 12 of its 16 cores.
  // Node b has a free GPU and 12 cores: too few for the pending pod (13),
  // enough for the CPU-heavy pod. Moving it lets the pending pod onto a.
  ClusterState s({{"a", 16000, 65536, 2, 0}, {"b", 12000, 65536, 1, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, whole(1, 12000), {NodeId{0}, 0b01, 1000}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{1}, whole(1, 13000)}};
  const DefragPlan plan = plan_defrag(s, goal, {}, {});
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].pod, PodId{0});
  EXPECT_EQ(plan.steps[0].to.node, NodeId{1});
  EXPECT_EQ(plan.steps[1].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps[1].to.node, NodeId{0});
  expect_valid(s, plan, goal);
}

TEST(DefragPlannerMoves, TwoHalfGpusMergeInsideTheNodeForALargeSharedPod) {
  // Two 470-milli pods on separate GPUs: one remap merges them and the
  // pending 810-milli pod takes the emptied GPU.
  ClusterState s({{"a", 32000, 65536, 2, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, shared(470), {NodeId{0}, 0b01, 470}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, shared(470), {NodeId{0}, 0b10, 470}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{2}, shared(810)}};
  const DefragPlan plan = plan_defrag(s, goal, {}, {});
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].kind, MoveKind::kRemap);
  EXPECT_EQ(plan.moves(), 1);
  EXPECT_EQ(plan.after.used_gpu_milli, 1750);
  expect_valid(s, plan, goal);
}

}  // namespace
}  // namespace gpupack
