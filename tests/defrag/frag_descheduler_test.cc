// The FGD simulator's deschedule rules as baselines (defrag/frag_descheduler.h):
// valid plans within the budget on random clusters, and the victim each rule
// picks on hand-built ones.
#include "defrag/frag_descheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "defrag/plan.h"
#include "defrag/random_cluster.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::shared;
using testing::whole;

constexpr FragDeschedulerRule kRules[] = {FragDeschedulerRule::kFragOnePod, FragDeschedulerRule::kFragMultiPod,
                                          FragDeschedulerRule::kCosSim};

TEST(FragDescheduler, PlansAreValidWithinTheBudgetAndLeaveTheStateAlone) {
  int moves = 0, admitted = 0;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    auto c = make_random_cluster(seed, 6, 4, 40 + static_cast<int>(seed * 3), 3, true, seed % 2 ? 32000 : 6000);
    const ClusterState before = c.state;
    auto policy = make_policy("bestfit", {});
    for (FragDeschedulerRule rule : kRules) {
      DefragGoal goal;
      goal.pending = c.pending;
      DefragBudget budget;
      budget.max_moves = 5;
      budget.max_unavailable = {{"group-0", 1}};
      const DefragPlan plan = plan_frag_descheduler(c.state, goal, budget, c.infos, *policy, {}, rule);
      const auto errors = validate_plan(c.state, plan, goal, budget, c.infos);
      ASSERT_TRUE(errors.empty()) << "seed " << seed << " " << plan.algorithm << ": " << errors.front();
      EXPECT_LE(plan.moves(), 5);
      std::set<int> moved;
      for (const PlanStep& st : plan.steps) {
        if (st.kind == MoveKind::kAdmit) continue;
        EXPECT_FALSE(move_info(c.infos, st.pod).immovable) << plan.algorithm;
        EXPECT_NE(st.from.node, st.to.node) << plan.algorithm << ": a move stays on its node";
        EXPECT_TRUE(moved.insert(static_cast<int>(index(st.pod))).second) << plan.algorithm << " moves a pod twice";
      }
      moves += plan.moves();
      admitted += plan.after.admitted_pods;
    }
    ASSERT_EQ(c.state.bound_pods(), before.bound_pods());
    for (PodId p : before.bound_pods()) ASSERT_EQ(c.state.assignment(p), before.assignment(p));
  }
  EXPECT_GT(moves, 20) << "the rules found nothing to move";
  EXPECT_GT(admitted, 5);
}

// Two 2-GPU nodes: n0 holds 300 + 300 milli (slivers of 700 free), n1 700 +
// 700 (slivers of 300); a whole-GPU pod waits. Against the pods' own mix
// (300, 700 and whole-GPU pods, 2:2:1) n1 is the more fragmented: its 300
// slivers fit neither 700 nor whole-GPU pods, F = 0.4 x 600 + 0.2 x 600 =
// 360 milli against n0's 0.2 x 1,400 = 280. So n1 gives the pod whose
// removal frees a whole GPU (the lower id of its two), which fills a 700
// sliver on n0, and the waiting pod takes the freed GPU.
TEST(FragDescheduler, TheMostFragmentedNodeGivesThePodThatFreesAWholeGpu) {
  std::vector<NodeSpec> nodes = {{"n0", 32000, 65536, 2, 0}, {"n1", 32000, 65536, 2, 0}};
  for (FragDeschedulerRule rule : {FragDeschedulerRule::kFragOnePod, FragDeschedulerRule::kFragMultiPod}) {
    ClusterState s(nodes);
    ASSERT_TRUE(s.bind(PodId{0}, shared(300), {NodeId{0}, 0b01, 300}).is_ok());
    ASSERT_TRUE(s.bind(PodId{1}, shared(300), {NodeId{0}, 0b10, 300}).is_ok());
    ASSERT_TRUE(s.bind(PodId{2}, shared(700), {NodeId{1}, 0b01, 700}).is_ok());
    ASSERT_TRUE(s.bind(PodId{3}, shared(700), {NodeId{1}, 0b10, 700}).is_ok());
    DefragGoal goal;
    goal.pending = {{PodId{4}, whole(1)}};
    DefragBudget budget;
    budget.max_moves = 1;
    auto policy = make_policy("bestfit", {});
    const DefragPlan plan = plan_frag_descheduler(s, goal, budget, {}, *policy, {}, rule);
    ASSERT_EQ(plan.steps.size(), 2u) << plan.algorithm;
    EXPECT_EQ(plan.steps[0].pod, PodId{2});
    EXPECT_EQ(plan.steps[0].from.node, NodeId{1});
    EXPECT_EQ(plan.steps[0].to.node, NodeId{0});
    EXPECT_EQ(plan.steps[1].kind, MoveKind::kAdmit);
    EXPECT_EQ(plan.steps[1].to.node, NodeId{1});
    EXPECT_EQ(plan.after.admitted_pods, 1);
    EXPECT_TRUE(validate_plan(s, plan, goal, budget, {}).empty());
  }
}

// cosSim: n0's CPU is nearly full (1,000 milli free) while a GPU has 900
// milli free. P (6 cores, 100 milli) is less like what n0 would have free
// without it than Q (1 core, 500 milli), so P moves.
TEST(FragDescheduler, CosSimMovesThePodLeastLikeTheFreeSpace) {
  ClusterState s({{"n0", 8000, 65536, 2, 0}, {"n1", 64000, 65536, 2, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, shared(100, 6000), {NodeId{0}, 0b01, 100}).is_ok());  // P
  ASSERT_TRUE(s.bind(PodId{1}, shared(500, 1000), {NodeId{0}, 0b10, 500}).is_ok());  // Q
  auto policy = make_policy("bestfit", {});
  DefragBudget budget;
  budget.max_moves = 1;
  const DefragPlan plan = plan_frag_descheduler(s, {}, budget, {}, *policy, {}, FragDeschedulerRule::kCosSim);
  ASSERT_EQ(plan.moves(), 1);
  EXPECT_EQ(plan.steps[0].pod, PodId{0});
  EXPECT_EQ(plan.steps[0].to.node, NodeId{1});
  // No node passes the CPU bar any more: nothing else moves with a larger budget.
  budget.max_moves = 10;
  EXPECT_EQ(plan_frag_descheduler(s, {}, budget, {}, *policy, {}, FragDeschedulerRule::kCosSim).moves(), 1);
}

}  // namespace
}  // namespace gpupack
