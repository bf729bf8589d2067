#include "defrag/methods.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "defrag/plan_writers.h"
#include "defrag/random_cluster.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;

nlohmann::json without_seconds(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos) {
  nlohmann::json j = plan_to_json(plan, state, infos);
  j.erase("plan_seconds");
  return j;
}

// The planner's two pipelines on two threads give the plan of one thread,
// move for move (also run under ThreadSanitizer: the swaps-first pipeline
// shares only const inputs with the calling thread, which alone uses the
// policy).
TEST(PlannerMethod, TwoThreadsPlanWhatOneThreadPlans) {
  int admitted_somewhere = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto c = make_random_cluster(seed, 12, 4, 110, 10, true, seed % 2 ? 32000 : 8000);
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 4 + static_cast<int>(seed % 3) * 4;
    auto policy = make_policy("bestfit", {});
    PlannerOptions opt;
    const DefragPlan serial = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, opt);
    opt.threads = 2;
    const DefragPlan parallel = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, opt);
    EXPECT_EQ(without_seconds(parallel, c.state, c.infos), without_seconds(serial, c.state, c.infos))
        << "seed " << seed;
    const auto errors = validate_plan(c.state, parallel, goal, budget, c.infos);
    EXPECT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    EXPECT_GT(parallel.plan_seconds, 0.0);
    if (parallel.after.admitted_gpu_milli > 0) ++admitted_somewhere;
  }
  EXPECT_GE(admitted_somewhere, 6);  // the comparison covers plans that admit something
}

// plan_seconds is the method's wall time, for every method.
TEST(PlannerMethod, PlanSecondsIsTheMethodsWallTime) {
  auto c = make_random_cluster(5, 12, 4, 110, 10, true);
  DefragGoal goal;
  goal.pending = c.pending;
  DefragBudget budget;
  budget.max_moves = 8;
  auto policy = make_policy("bestfit", {});
  for (const std::string& method : defrag_method_names()) {
    const auto start = std::chrono::steady_clock::now();
    const DefragPlan plan = plan_by_method(method, c.state, goal, budget, c.infos, *policy, {});
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(plan.plan_seconds, 0.0) << method;
    EXPECT_LE(plan.plan_seconds, wall) << method;
    EXPECT_GE(plan.plan_seconds, 0.5 * wall) << method;  // not just one stage's clock
  }
}

}  // namespace
}  // namespace gpupack
