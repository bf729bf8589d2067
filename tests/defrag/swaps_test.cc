#include "defrag/swaps.h"

#include <gtest/gtest.h>

#include "defrag/methods.h"
#include "defrag/plan_writers.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"
#include "defrag/refine.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::nodes;
using testing::shared;

// Two one-GPU nodes of 4 cores. n0: A (700 milli, 1 core), 3 cores free.
// n1: B (400 milli, 1 core) and C (CPU only, 3 cores, immovable): no core
// free. Pending P (500 milli, 1 core) fits neither. A and B trading GPUs
// admits P on n0, and neither move fits before the other has left.
struct Trade {
  ClusterState state{nodes(2, 1, 4000)};
  PodMoveInfos infos;
  DefragGoal goal;
  Trade() {
    EXPECT_TRUE(state.bind(PodId{0}, shared(700), Assignment{NodeId{0}, 1u, 700}).is_ok());
    EXPECT_TRUE(state.bind(PodId{1}, shared(400), Assignment{NodeId{1}, 1u, 400}).is_ok());
    EXPECT_TRUE(state.bind(PodId{2}, Request{3000, 1024, 0, 0, 0}, Assignment{NodeId{1}, 0u, 0}).is_ok());
    state.commit();
    infos.resize(4);
    infos[2].immovable = true;
    goal.pending = {{PodId{3}, shared(500)}};
  }
};

TEST(Swaps, TwoPodsTradeGpusWithOneParked) {
  Trade t;
  DefragBudget budget;
  budget.max_moves = 4;
  const DefragPlan plan = plan_swaps(t.state, t.goal, budget, t.infos);
  const auto errors = validate_plan(t.state, plan, t.goal, budget, t.infos);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(plan.steps.size(), 4U);
  EXPECT_TRUE(plan.steps[0].parked);
  EXPECT_EQ(plan.steps[0].pod, PodId{0});
  EXPECT_EQ(plan.steps[1].pod, PodId{1});
  EXPECT_EQ(plan.steps[1].to.node, NodeId{0});
  EXPECT_EQ(plan.steps[2].kind, MoveKind::kLand);
  EXPECT_EQ(plan.steps[2].to.node, NodeId{1});
  EXPECT_EQ(plan.steps[3].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps[3].to.node, NodeId{0});
  EXPECT_EQ(plan.use.moves, 2);
  EXPECT_EQ(plan.after.admitted_gpu_milli, 500);
  // The writers say which move is parked.
  const nlohmann::json ev = eviction_list(plan, t.state, t.infos);
  ASSERT_EQ(ev["items"].size(), 2U);
  EXPECT_EQ(ev["items"][0]["metadata"]["annotations"].value("gpupack.io/parked", ""), "true");
  EXPECT_FALSE(ev["items"][1]["metadata"]["annotations"].contains("gpupack.io/parked"));
  const nlohmann::json j = plan_to_json(plan, t.state, t.infos);
  EXPECT_EQ(j["steps"][0]["parked"], true);
  EXPECT_EQ(j["steps"][2]["kind"], "land");
  EXPECT_NE(format_plan_table(plan, t.state, t.infos).find(" park "), std::string::npos);
  // Two moves short: nothing.
  budget.max_moves = 1;
  EXPECT_TRUE(plan_swaps(t.state, t.goal, budget, t.infos).steps.empty());
  // The planner method finds it too, and without swaps it cannot.
  auto policy = make_policy("bestfit", {});
  budget.max_moves = 4;
  EXPECT_EQ(plan_by_method("planner", t.state, t.goal, budget, t.infos, *policy, {}).after.admitted_gpu_milli, 500);
  PlannerOptions off;
  off.swaps = false;
  EXPECT_EQ(plan_by_method("planner", t.state, t.goal, budget, t.infos, *policy, {}, off).after.admitted_gpu_milli, 0);
}

// testing::CpuShort: A on n0 trades GPUs with B on n1, freeing the cores P
// lacks on n0.
TEST(Swaps, APodTradesPlacesWithOneAskingLessCpuToAdmitAWholeGpu) {
  testing::CpuShort c;
  const ClusterState& state = c.state;
  const PodMoveInfos& infos = c.infos;
  const DefragGoal& goal = c.goal;
  DefragBudget budget;
  budget.max_moves = 4;
  const DefragPlan plan = plan_swaps(state, goal, budget, infos);
  const auto errors = validate_plan(state, plan, goal, budget, infos);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(plan.steps.size(), 3U);
  EXPECT_EQ(plan.steps[0].pod, PodId{1});  // B fits beside A: it goes first
  EXPECT_EQ(plan.steps[0].to.node, NodeId{0});
  EXPECT_EQ(plan.steps[1].pod, PodId{0});
  EXPECT_EQ(plan.steps[1].to.node, NodeId{1});
  EXPECT_EQ(plan.steps[2].kind, MoveKind::kAdmit);
  EXPECT_EQ(plan.steps[2].to.node, NodeId{0});
  EXPECT_EQ(plan.steps[2].to.gpu_mask, 2u);
  EXPECT_EQ(plan.after.admitted_gpu_milli, 1000);
  // B asking as many cores as A frees none: nothing.
  ClusterState same = state;
  ASSERT_TRUE(same.unbind(PodId{1}).is_ok());
  ASSERT_TRUE(same.bind(PodId{1}, shared(450, 3000), Assignment{NodeId{1}, 1u, 450}).is_ok());
  same.commit();
  EXPECT_TRUE(plan_swaps(same, goal, budget, infos).steps.empty());
}

TEST(Swaps, ValidationNamesAParkWithoutLandAndALandWithoutPark) {
  Trade t;
  DefragBudget budget;
  const DefragPlan plan = plan_swaps(t.state, t.goal, budget, t.infos);
  ASSERT_EQ(plan.steps.size(), 4U);
  DefragPlan no_land = plan;
  no_land.steps.erase(no_land.steps.begin() + 2);
  bool named = false;
  for (const std::string& e : validate_plan(t.state, no_land, t.goal, budget, t.infos))
    named = named || e.find("parked and never lands") != std::string::npos || e.find("step 3") != std::string::npos;
  EXPECT_TRUE(named);
  DefragPlan no_park = plan;
  no_park.steps[0].parked = false;  // a plain move that does not fit
  EXPECT_FALSE(validate_plan(t.state, no_park, t.goal, budget, t.infos).empty());
  // Pruning keeps the cycle the admission needs, and drops it whole when
  // the admission goes.
  EXPECT_EQ(prune_plan(t.state, plan, t.goal, t.infos).steps.size(), 4U);
  DefragPlan no_admit = plan;
  no_admit.steps.pop_back();
  const DefragPlan pruned = prune_plan(t.state, no_admit, t.goal, t.infos);
  EXPECT_TRUE(pruned.steps.empty());
  EXPECT_TRUE(validate_plan(t.state, pruned, t.goal, budget, t.infos).empty());
}

TEST(Swaps, OnRandomClustersPlansAreValidAndTheValueRuleStillHolds) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto c = make_random_cluster(seed, 12, 4, 110, 10, true, seed % 2 ? 32000 : 8000);
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 6 + static_cast<int>(seed % 3) * 6;
    const DefragPlan swaps = plan_swaps(c.state, goal, budget, c.infos);
    auto errors = validate_plan(c.state, swaps, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    auto policy = make_policy("bestfit", {});
    PlannerOptions rule;
    rule.max_moves_per_gpu = 4;
    const DefragPlan trimmed = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, rule);
    errors = validate_plan(c.state, trimmed, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    if (trimmed.use.moves > 0) {
      EXPECT_LE(trimmed.use.moves * 1000.0, 4.0 * static_cast<double>(trimmed.after.admitted_gpu_milli) + 1e-6);
    }
  }
}

}  // namespace
}  // namespace gpupack
