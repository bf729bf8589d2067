#include "defrag/bound.h"

#include <gtest/gtest.h>

#include "defrag/ilp.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::nodes;
using testing::shared;
using testing::whole;

TEST(DefragBound, DualFeasibleFunctionCountsLargeSharesAsWholeGpus) {
  EXPECT_EQ(dual_feasible_milli(810, 191), 1000);  // 810 > 1000 - 191
  EXPECT_EQ(dual_feasible_milli(810, 190), 810);
  EXPECT_EQ(dual_feasible_milli(160, 191), 0);
  EXPECT_EQ(dual_feasible_milli(470, 191), 470);
  EXPECT_EQ(dual_feasible_milli(1000, 1), 1000);
  EXPECT_EQ(dual_feasible_milli(500, 500), 500);
}

// The certificate: the solver's duals give back the LP optimum through weak
// duality alone, any other duals give no less, and the bound is never below
// the exact optimum (the ILP over GPUs, order of moves ignored) nor below the
// greedy planner's plan.
TEST(DefragBound, CertificateBoundsTheExactOptimumOnSmallInstances) {
  int compared = 0, tighter_than_pending = 0;
  for (uint64_t seed = 300; seed < 340; ++seed) {
    auto c = make_random_cluster(seed, 3, 4, 40, 3, seed % 2 == 0, 24000);
    if (c.pending.empty()) continue;
    DefragGoal goal;
    goal.pending = c.pending;
    goal.gang = seed % 5 == 0;
    DefragBudget budget;
    budget.max_moves = static_cast<int>(seed % 4);
    if (seed % 3 == 0) budget.max_unavailable = {{"group-0", 1}};
    const DefragBound b = defrag_bound(c.state, goal, budget, c.infos);
    ASSERT_TRUE(b.solved) << "seed " << seed;
    EXPECT_NEAR(b.certified_milli, b.admitted_milli, 1e-6 * std::max(1.0, b.admitted_milli)) << "seed " << seed;
    // Weak duality holds for any duals: scaled or zeroed ones bound from above too.
    std::vector<double> scaled = b.duals;
    for (double& y : scaled) y *= 1.5;
    EXPECT_GE(certify(b.lp, scaled), b.admitted_milli - 1e-6) << "seed " << seed;
    EXPECT_GE(certify(b.lp, std::vector<double>(b.duals.size(), 0.0)), b.admitted_milli - 1e-6);

    const IlpResult exact = solve_defrag_ilp(c.state, goal, budget, c.infos, 20, false);
    const DefragPlan plan = plan_defrag(c.state, goal, budget, c.infos);
    EXPECT_GE(b.admitted_milli + 1e-6, static_cast<double>(plan.after.admitted_gpu_milli)) << "seed " << seed;
    if (!exact.optimal) continue;
    EXPECT_GE(b.admitted_milli + 1e-6, exact.objective) << "seed " << seed;
    double pending = 0;
    for (const PendingPod& p : c.pending) pending += static_cast<double>(p.request.total_gpu_milli());
    tighter_than_pending += b.admitted_milli < pending - 1e-6;
    ++compared;
  }
  ASSERT_GE(compared, 20);
  // Not vacuous: on most instances the bound is below "every pending pod admitted".
  EXPECT_GE(tighter_than_pending, compared / 2);
}

TEST(DefragBound, CpuBindsWhenTheFreeGpuHasNoCpuLeft) {
  ClusterState s(nodes(2, 2, 8000));
  // Node 0: one GPU free, every CPU taken. Node 1: both GPUs taken, CPU free.
  ASSERT_TRUE(s.bind(PodId{0}, whole(1, 8000), {NodeId{0}, 0b01, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, whole(2, 1000), {NodeId{1}, 0b11, 1000}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{2}, whole(1, 1000)}};
  PodMoveInfos infos(3);
  infos[0].immovable = true;
  infos[1].immovable = true;
  DefragBound b = defrag_bound(s, goal, {}, infos);
  ASSERT_TRUE(b.solved);
  EXPECT_NEAR(b.admitted_milli, 0, 1e-6);
  bool cpu_priced = false;
  for (const DefragBound::Binding& fam : b.binding) cpu_priced = cpu_priced || (fam.family == "cpu" && fam.rows > 0);
  EXPECT_TRUE(cpu_priced);
  BoundOptions no_cpu;
  no_cpu.cpu = false;
  EXPECT_NEAR(defrag_bound(s, goal, {}, infos, no_cpu).admitted_milli, 1000, 1e-6);
}

TEST(DefragBound, PackingRowsSeeThatTwoHalfFreeGpusDoNotHoldAWholeOne) {
  ClusterState s(nodes(1, 2));
  ASSERT_TRUE(s.bind(PodId{0}, shared(600), {NodeId{0}, 0b01, 600}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, shared(600), {NodeId{0}, 0b10, 600}).is_ok());
  DefragGoal goal;
  goal.pending = {{PodId{2}, shared(800)}};
  DefragBudget none;
  none.max_moves = 0;
  EXPECT_NEAR(defrag_bound(s, goal, none, {}).admitted_milli, 0, 1e-6);
  BoundOptions no_packing;
  no_packing.gpu_packing = false;
  EXPECT_NEAR(defrag_bound(s, goal, none, {}, no_packing).admitted_milli, 800, 1e-6);
  // One move may take a 600 pod away; with a second node to take it, 800 fits.
  ClusterState t(nodes(2, 2));
  ASSERT_TRUE(t.bind(PodId{0}, shared(600), {NodeId{0}, 0b01, 600}).is_ok());
  ASSERT_TRUE(t.bind(PodId{1}, shared(600), {NodeId{0}, 0b10, 600}).is_ok());
  ASSERT_TRUE(t.bind(PodId{3}, whole(2), {NodeId{1}, 0b11, 1000}).is_ok());
  DefragBudget one;
  one.max_moves = 1;
  EXPECT_NEAR(defrag_bound(t, goal, one, {}).admitted_milli, 0, 1e-6);  // node 1 is full
  ASSERT_TRUE(t.unbind(PodId{3}).is_ok());
  ASSERT_TRUE(t.bind(PodId{3}, shared(300), {NodeId{1}, 0b01, 300}).is_ok());
  const DefragBound b = defrag_bound(t, goal, one, {});
  EXPECT_NEAR(b.admitted_milli, 800, 1e-6);
  EXPECT_LE(b.moves_used, 1 + 1e-9);
}

TEST(DefragBound, RefusesOtherGoals) {
  ClusterState s(nodes(1, 1));
  DefragGoal goal;
  goal.kind = GoalKind::kFreeGpus;
  EXPECT_THROW(defrag_bound(s, goal, {}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace gpupack
