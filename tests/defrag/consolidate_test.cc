// Consolidate first, then plan (defrag/consolidate.h), and the "planner"
// method that keeps the better of it and plan_defrag().
#include "defrag/consolidate.h"

#include <gtest/gtest.h>

#include "defrag/frag_descheduler.h"
#include "defrag/methods.h"
#include "defrag/plan.h"
#include "defrag/random_cluster.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;

// On random clusters: every plan is valid within the budget, the planner
// method admits at least what plan_defrag() and frag-multi-pod admit at the
// same cap, and more than plan_defrag() on some.
TEST(Consolidate, ThePlannerAdmitsAtLeastItsGreedyAndTheBestBaseline) {
  int better = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto c = make_random_cluster(seed, 8, 4, 60 + static_cast<int>(seed * 2), 6, true, seed % 3 ? 32000 : 8000);
    auto policy = make_policy("bestfit", {});
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 6;
    if (seed % 2) budget.max_unavailable = {{"group-0", 1}};
    const DefragPlan first = plan_consolidate_first(c.state, goal, budget, c.infos, *policy, {}, {});
    ASSERT_TRUE(validate_plan(c.state, first, goal, budget, c.infos).empty()) << "seed " << seed;
    const DefragPlan greedy = plan_defrag(c.state, goal, budget, c.infos);
    const DefragPlan multi =
        plan_frag_descheduler(c.state, goal, budget, c.infos, *policy, {}, FragDeschedulerRule::kFragMultiPod);
    const DefragPlan planner = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {});
    const auto errors = validate_plan(c.state, planner, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    EXPECT_LE(planner.moves(), 6);
    EXPECT_GE(planner.after.admitted_gpu_milli, greedy.after.admitted_gpu_milli) << "seed " << seed;
    if (validate_plan(c.state, multi, goal, budget, c.infos).empty()) {
      EXPECT_GE(planner.after.admitted_gpu_milli, multi.after.admitted_gpu_milli) << "seed " << seed;
    }
    better += planner.after.admitted_gpu_milli > greedy.after.admitted_gpu_milli;
  }
  EXPECT_GT(better, 0) << "consolidation never admitted more than the greedy";
}

// Only goal admit under a move cap consolidates; the time limit holds; with
// consolidation off or no cap the method is plan_defrag().
TEST(Consolidate, OtherGoalsAndTheSwitchKeepTheGreedy) {
  auto c = make_random_cluster(7, 8, 4, 80, 6, false);
  auto policy = make_policy("bestfit", {});
  DefragBudget budget;
  budget.max_moves = 6;
  DefragGoal free_gpus;
  free_gpus.kind = GoalKind::kFreeGpus;
  EXPECT_TRUE(plan_consolidate_first(c.state, free_gpus, budget, c.infos, *policy, {}, {}).steps.empty());
  DefragGoal admit;
  admit.pending = c.pending;
  PlannerOptions off;
  off.consolidate = false;
  off.swaps = false;
  // A time limit already spent: no round, no greedy, still a valid plan.
  PlannerOptions no_time;
  no_time.time_limit_s = 1e-9;
  const DefragPlan late = plan_consolidate_first(c.state, admit, budget, c.infos, *policy, {}, no_time);
  EXPECT_TRUE(late.steps.empty());
  EXPECT_EQ(late.not_admitted.size(), admit.pending.size());
  EXPECT_TRUE(validate_plan(c.state, late, admit, budget, c.infos).empty());
  auto same_steps = [](const DefragPlan& a, const DefragPlan& b) {
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].pod, b.steps[i].pod);
  };
  same_steps(plan_by_method("planner", c.state, admit, budget, c.infos, *policy, {}, off),
             plan_defrag(c.state, admit, budget, c.infos, off));
  // No move cap: the greedy's plan, whatever consolidation would find.
  const DefragBudget unlimited;
  same_steps(plan_by_method("planner", c.state, admit, unlimited, c.infos, *policy, {}),
             plan_defrag(c.state, admit, unlimited, c.infos));
}

}  // namespace
}  // namespace gpupack
