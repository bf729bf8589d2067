#include "defrag/chains.h"

#include <gtest/gtest.h>

#include "defrag/methods.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"
#include "defrag/swaps.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::nodes;
using testing::shared;

// Three one-GPU nodes of 4 cores. n0: A (800 milli), hole 200, 3 cores free.
// n1: B1 (650), hole 150, and 2 cores held by an immovable CPU-only pod.
// n2: B2 (450) and an immovable 350, hole 200, 2 cores free. Pending P (500
// milli, 2 cores) fits only n0's CPU and no GPU. No pod fits any hole as it
// is, and no two pods can trade: A into n1 once B1 left, B1 into n2 once B2
// left, B2 into n0 beside P once A left is the only way (a cycle of three).
struct Cycle {
  ClusterState state{nodes(3, 1, 4000)};
  PodMoveInfos infos;
  DefragGoal goal;
  Cycle() {
    bind(0, shared(800), 0, 800);
    bind(1, shared(650), 1, 650);
    bind(2, Request{2000, 1024, 0, 0, 0}, 1, 0);
    bind(3, shared(450), 2, 450);
    bind(4, shared(350), 2, 350);
    state.commit();
    infos.resize(6);
    infos[2].immovable = true;
    infos[4].immovable = true;
    goal.pending = {{PodId{5}, shared(500, 2000)}};
  }
  void bind(int32_t pod, const Request& r, int node, int32_t milli) {
    const uint32_t mask = r.is_gpu() ? 1u : 0u;
    ASSERT_TRUE(state.bind(PodId{pod}, r, Assignment{NodeId{node}, mask, milli}).is_ok());
  }
};

TEST(Chains, ThreePodsInACycleAdmitWhatNoSwapCan) {
  Cycle c;
  DefragBudget budget;
  budget.max_moves = 6;
  EXPECT_TRUE(plan_swaps(c.state, c.goal, budget, c.infos).steps.empty());
  const DefragPlan plan = plan_chains(c.state, c.goal, budget, c.infos);
  const auto errors = validate_plan(c.state, plan, c.goal, budget, c.infos);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(plan.steps.size(), 5U);
  // Park A (bound for n1), B2 into n0, B1 into n2, land A, admit P on n0.
  EXPECT_TRUE(plan.steps[0].parked);
  EXPECT_EQ(plan.steps[0].pod, PodId{0});
  EXPECT_EQ(plan.steps[0].to.node, NodeId{1});
  EXPECT_EQ(plan.steps[1].pod, PodId{3});
  EXPECT_EQ(plan.steps[1].to.node, NodeId{0});
  EXPECT_EQ(plan.steps[2].pod, PodId{1});
  EXPECT_EQ(plan.steps[2].to.node, NodeId{2});
  EXPECT_EQ(plan.steps[3].kind, MoveKind::kLand);
  EXPECT_EQ(plan.steps[3].pod, PodId{0});
  EXPECT_EQ(plan.steps[4].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps[4].to.node, NodeId{0});
  EXPECT_EQ(plan.use.moves, 3);
  EXPECT_EQ(plan.after.admitted_gpu_milli, 500);
  // Three moves are needed: two are not enough, and chains of two find nothing.
  budget.max_moves = 2;
  EXPECT_TRUE(plan_chains(c.state, c.goal, budget, c.infos).steps.empty());
  budget.max_moves = 6;
  EXPECT_TRUE(plan_chains(c.state, c.goal, budget, c.infos, 2).steps.empty());
  // Searched from depth 4 (at most 4 moves) it is found the same; a search
  // from depth 4 does not start with 3 moves left.
  EXPECT_EQ(plan_chains(c.state, c.goal, budget, c.infos, 6, 0, 4).use.moves, 3);
  budget.max_moves = 3;
  EXPECT_EQ(plan_chains(c.state, c.goal, budget, c.infos, 6, 0, 3).use.moves, 3);
  EXPECT_TRUE(plan_chains(c.state, c.goal, budget, c.infos, 6, 0, 4).steps.empty());
  budget.max_moves = 6;
  // The planner finds it, and without chains it cannot.
  auto policy = make_policy("bestfit", {});
  EXPECT_EQ(plan_by_method("planner", c.state, c.goal, budget, c.infos, *policy, {}).after.admitted_gpu_milli, 500);
  PlannerOptions off;
  off.chains = false;
  EXPECT_EQ(plan_by_method("planner", c.state, c.goal, budget, c.infos, *policy, {}, off).after.admitted_gpu_milli, 0);
}

TEST(Chains, AChainWithAHoleAtItsEndRunsLastLinkFirstWithoutParking) {
  // As Cycle, but n2 holds only an immovable 350 with 3 cores: room for B1
  // as it is, not for P (nor for P on n1 once B1 left: 2.5 cores held). Then B1 into n2 first, A into n1, P on n0:
  // plain moves in that order.
  ClusterState state{nodes(3, 1, 4000)};
  ASSERT_TRUE(state.bind(PodId{0}, shared(800), Assignment{NodeId{0}, 1u, 800}).is_ok());
  ASSERT_TRUE(state.bind(PodId{1}, shared(650), Assignment{NodeId{1}, 1u, 650}).is_ok());
  ASSERT_TRUE(state.bind(PodId{2}, Request{2500, 1024, 0, 0, 0}, Assignment{NodeId{1}, 0u, 0}).is_ok());
  ASSERT_TRUE(state.bind(PodId{3}, shared(350, 3000), Assignment{NodeId{2}, 1u, 350}).is_ok());
  state.commit();
  PodMoveInfos infos(5);
  infos[2].immovable = true;
  infos[3].immovable = true;
  DefragGoal goal;
  goal.pending = {{PodId{4}, shared(500, 2000)}};
  DefragBudget budget;
  budget.max_moves = 4;
  const DefragPlan plan = plan_chains(state, goal, budget, infos);
  const auto errors = validate_plan(state, plan, goal, budget, infos);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(plan.steps.size(), 3U);
  for (const PlanStep& s : plan.steps) EXPECT_FALSE(s.parked);
  EXPECT_EQ(plan.steps[0].pod, PodId{1});
  EXPECT_EQ(plan.steps[0].to.node, NodeId{2});
  EXPECT_EQ(plan.steps[1].pod, PodId{0});
  EXPECT_EQ(plan.steps[1].to.node, NodeId{1});
  EXPECT_EQ(plan.steps[2].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.use.moves, 2);
}

TEST(Chains, APendingPodShortOfCoresIsAdmittedByAPodLeavingTheNode) {
  // testing::CpuShort: A leaves n0 for B's GPU and B closes the cycle on A's;
  // P goes on n0's free GPU 1.
  testing::CpuShort c;
  const ClusterState& state = c.state;
  const PodMoveInfos& infos = c.infos;
  const DefragGoal& goal = c.goal;
  DefragBudget budget;
  budget.max_moves = 4;
  const DefragPlan plan = plan_chains(state, goal, budget, infos);
  const auto errors = validate_plan(state, plan, goal, budget, infos);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_FALSE(plan.steps.empty());
  EXPECT_EQ(plan.steps.back().kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps.back().to.node, NodeId{0});
  EXPECT_EQ(plan.steps.back().to.gpu_mask, 2u);
  EXPECT_EQ(plan.use.moves, 2);
  EXPECT_EQ(plan.after.admitted_gpu_milli, 1000);
}

TEST(Chains, ImmovablePodsAndCpuAreRespected) {
  Cycle c;
  DefragBudget budget;
  budget.max_moves = 6;
  // B1 immovable: no cycle through n1, nothing else works.
  PodMoveInfos fixed = c.infos;
  fixed[1].immovable = true;
  EXPECT_TRUE(plan_chains(c.state, c.goal, budget, fixed).steps.empty());
  // P asking 4 cores: n0 has 3 free plus A's 1 and loses B2's 1 when B2 lands.
  DefragGoal hungry = c.goal;
  hungry.pending[0].request = shared(500, 4000);
  EXPECT_TRUE(plan_chains(c.state, hungry, budget, c.infos).steps.empty());
}

TEST(Chains, OnRandomClustersPlansAreValidAndThePlannerNeverLosesByThem) {
  auto policy = make_policy("bestfit", {});
  int admitted_by_chains = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto c = make_random_cluster(seed, 12, 4, 110, 10, true, seed % 2 ? 32000 : 8000);
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 6 + static_cast<int>(seed % 3) * 6;
    const DefragPlan chains = plan_chains(c.state, goal, budget, c.infos, 2 + static_cast<int>(seed % 4));
    auto errors = validate_plan(c.state, chains, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    admitted_by_chains += chains.after.admitted_pods;
    PlannerOptions off;
    off.chains = false;
    const DefragPlan with = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {});
    const DefragPlan without = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, off);
    errors = validate_plan(c.state, with, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    EXPECT_GE(with.after.admitted_gpu_milli, without.after.admitted_gpu_milli) << "seed " << seed;
  }
  EXPECT_GT(admitted_by_chains, 0);  // the random clusters exercise the search
}

}  // namespace
}  // namespace gpupack
