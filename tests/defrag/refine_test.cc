// Plan refinement (defrag/refine.h): pruning the moves a plan's admissions
// do not need, and re-spending the moves saved.
#include "defrag/refine.h"

#include <gtest/gtest.h>

#include <set>

#include "defrag/methods.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::nodes;
using testing::shared;
using testing::whole;

// One GPU per node: n0 A(700), n1 B(600), n2 C(400), n3 D(100), n4 E(100).
// Pending: two whole-GPU pods. No GPU is free.
struct Chain {
  ClusterState state{nodes(5, 1)};
  PodMoveInfos infos;
  DefragGoal goal;
  Chain() {
    const int32_t milli[] = {700, 600, 400, 100, 100};
    for (int n = 0; n < 5; ++n)
      EXPECT_TRUE(state.bind(PodId{n}, shared(milli[n]), Assignment{NodeId{n}, 1u, milli[n]}).is_ok());
    state.commit();
    infos.resize(7);
    goal.pending = {{PodId{5}, whole(1)}, {PodId{6}, whole(1)}};
  }
  PlanStep move(int pod, int to) const {
    const Assignment from = state.assignment(PodId{pod});
    return PlanStep{MoveKind::kEvict,
                    PodId{pod},
                    state.request(PodId{pod}),
                    from,
                    Assignment{NodeId{to}, 1u, from.gpu_milli},
                    1.0,
                    {}};
  }
  PlanStep admit(int pod, int at) const {
    return PlanStep{MoveKind::kAdmit, PodId{pod}, whole(1), Assignment{}, Assignment{NodeId{at}, 1u, 1000}, 0, {}};
  }
  // B -> n4 lets nothing in; C -> n3 makes room for A -> n2, which frees n0
  // for the first pending pod.
  DefragPlan plan() const {
    DefragPlan p;
    p.steps = {move(1, 4), move(2, 3), move(0, 2), admit(5, 0)};
    p.use.moves = 3;
    return p;
  }
};

TEST(Refine, PruneDropsTheMoveNothingNeedsAndKeepsTheChain) {
  Chain c;
  const DefragPlan pruned = prune_plan(c.state, c.plan(), c.goal, c.infos);
  ASSERT_EQ(pruned.steps.size(), 3u);
  EXPECT_EQ(pruned.steps[0].pod, PodId{2});  // C leaves n2 first
  EXPECT_EQ(pruned.steps[1].pod, PodId{0});  // then A moves into it
  EXPECT_EQ(pruned.steps[2].kind, MoveKind::kAdmit);
  EXPECT_EQ(pruned.moves(), 2);
  EXPECT_EQ(pruned.after.admitted_gpu_milli, 1000);
  EXPECT_EQ(pruned.not_admitted, std::vector<PodId>{PodId{6}});
  DefragBudget budget;
  budget.max_moves = 3;
  const auto errors = validate_plan(c.state, pruned, c.goal, budget, c.infos);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // A plan that does not apply (A into n2 before C leaves) is refused.
  DefragPlan bad = c.plan();
  std::swap(bad.steps[1], bad.steps[2]);
  EXPECT_THROW(prune_plan(c.state, bad, c.goal, c.infos), std::invalid_argument);
}

// The saved move admits the second pod (B -> n4, then n1 is free).
TEST(Refine, TheMovesSavedAdmitMore) {
  Chain c;
  DefragBudget budget;
  budget.max_moves = 3;
  const ReplanFn greedy = [](const ClusterState& s, const DefragGoal& g, const DefragBudget& b, const PodMoveInfos& i) {
    return plan_defrag(s, g, b, i);
  };
  const DefragPlan refined = refine_plan(c.state, c.plan(), c.goal, budget, c.infos, greedy);
  EXPECT_EQ(refined.after.admitted_gpu_milli, 2000);
  EXPECT_TRUE(refined.not_admitted.empty());
  EXPECT_EQ(refined.moves(), 3);
  EXPECT_TRUE(refined.algorithm.ends_with(" + refinement")) << refined.algorithm;
  const auto errors = validate_plan(c.state, refined, c.goal, budget, c.infos);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // With no move left after the prune, nothing more.
  budget.max_moves = 2;
  const DefragPlan tight = refine_plan(c.state, c.plan(), c.goal, budget, c.infos, greedy);
  EXPECT_EQ(tight.after.admitted_gpu_milli, 1000);
}

// A pod the plan moved or admitted is offered to the re-planner as immovable.
TEST(Refine, TheReplannerSeesThePlansPodsAsImmovable) {
  Chain c;
  DefragBudget budget;
  budget.max_moves = 3;
  std::set<int> held;
  const ReplanFn spy = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b, const PodMoveInfos& i) {
    for (int p = 0; p < 7; ++p)
      if (move_info(i, PodId{p}).immovable) held.insert(p);
    EXPECT_EQ(b.max_moves, 1);
    EXPECT_EQ(g.pending.size(), 1u);
    return plan_defrag(s, g, b, i);
  };
  refine_plan(c.state, c.plan(), c.goal, budget, c.infos, spy);
  EXPECT_EQ(held, (std::set<int>{0, 2, 5}));
}

// On random clusters: the planner with refinement is valid within the
// budget, moves no pod twice, admits at least what it admits without, and
// every move of a pruned plan is needed (dropping any one breaks the plan).
TEST(Refine, OnRandomClustersRefiningNeverLosesAndPrunedMovesAreNeeded) {
  int better = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    auto c = make_random_cluster(seed, 16, 4, 140 + static_cast<int>(seed * 2), 12, true, seed % 3 ? 32000 : 8000);
    auto policy = make_policy("bestfit", {});
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 8 + static_cast<int>(seed % 4) * 8;
    if (seed % 2) budget.max_unavailable = {{"group-0", 1}};
    PlannerOptions off;
    off.refine = false;
    const DefragPlan plain = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, off);
    const DefragPlan refined = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {});
    const auto errors = validate_plan(c.state, refined, goal, budget, c.infos);
    ASSERT_TRUE(errors.empty()) << "seed " << seed << ": " << errors.front();
    EXPECT_GE(refined.after.admitted_gpu_milli, plain.after.admitted_gpu_milli) << "seed " << seed;
    better += refined.after.admitted_gpu_milli > plain.after.admitted_gpu_milli;
    std::set<int> seen;
    for (const PlanStep& s : refined.steps)  // a pod moves or is admitted once (a parked pod also lands)
      if (s.kind != MoveKind::kLand) {
        EXPECT_TRUE(seen.insert(static_cast<int>(s.pod)).second) << "seed " << seed;
      }

    const DefragPlan pruned = prune_plan(c.state, plain, goal, c.infos);
    EXPECT_TRUE(validate_plan(c.state, pruned, goal, budget, c.infos).empty()) << "seed " << seed;
    EXPECT_EQ(pruned.after.admitted_gpu_milli, plain.after.admitted_gpu_milli);
    EXPECT_LE(pruned.moves(), plain.moves());
    for (size_t k = 0; k < pruned.steps.size(); ++k) {
      if (pruned.steps[k].kind == MoveKind::kAdmit) continue;
      DefragPlan without = pruned;
      without.steps.erase(without.steps.begin() + static_cast<std::ptrdiff_t>(k));
      ClusterState copy = c.state;
      EXPECT_THROW(apply_plan(copy, without), std::invalid_argument) << "seed " << seed << " step " << k;
    }
  }
  EXPECT_GT(better, 0) << "refinement never admitted more";
}

TEST(Refine, OtherGoalsAndGangsAreLeftAlone) {
  Chain c;
  DefragBudget budget;
  budget.max_moves = 3;
  int calls = 0;
  const ReplanFn count = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b, const PodMoveInfos& i) {
    ++calls;
    return plan_defrag(s, g, b, i);
  };
  DefragGoal gang = c.goal;
  gang.gang = true;
  EXPECT_EQ(refine_plan(c.state, c.plan(), gang, budget, c.infos, count).steps.size(), 4u);
  DefragGoal free_gpus;
  free_gpus.kind = GoalKind::kFreeGpus;
  DefragPlan evacuate;
  evacuate.goal = GoalKind::kFreeGpus;
  evacuate.steps = {c.move(1, 4)};
  EXPECT_EQ(refine_plan(c.state, evacuate, free_gpus, budget, c.infos, count).steps.size(), 1u);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

// The value rule on the chain: B -> n4 (needed by nothing), then C -> n3 and
// A -> n2 to admit one whole-GPU pod on n0: 3 moves for 1 GPU.
TEST(Refine, ValueTrimKeepsWhatPaysAndNothingElse) {
  Chain c;
  DefragPlan plan = prune_plan(c.state, c.plan(), c.goal, c.infos);
  plan.steps.insert(plan.steps.begin(), c.move(1, 4));  // B -> n4 again: 3 moves for 1 GPU
  plan.use.moves = 3;
  plan.after.admitted_gpu_milli = 1000;
  plan.algorithm = "hand";
  // Within the rule: unchanged, unneeded move and all.
  EXPECT_EQ(trim_to_value(c.state, plan, c.goal, c.infos, 3).steps.size(), 4u);
  EXPECT_EQ(trim_to_value(c.state, plan, c.goal, c.infos, -1).steps.size(), 4u);
  // 2 moves per GPU: the move nothing needs goes, the admission stays.
  const DefragPlan two = trim_to_value(c.state, plan, c.goal, c.infos, 2);
  EXPECT_EQ(two.moves(), 2);
  EXPECT_EQ(two.after.admitted_gpu_milli, 1000);
  EXPECT_EQ(two.algorithm, "hand + value trim");
  DefragBudget budget;
  budget.max_moves = 3;
  auto errors = validate_plan(c.state, two, c.goal, budget, c.infos);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // 1.5 per GPU: the admission does not pay for its two moves.
  const DefragPlan none = trim_to_value(c.state, plan, c.goal, c.infos, 1.5);
  EXPECT_EQ(none.moves(), 0);
  EXPECT_TRUE(none.steps.empty());
  EXPECT_EQ(none.not_admitted.size(), 2u);
  // Gangs and other goals: unchanged.
  DefragGoal gang = c.goal;
  gang.gang = true;
  EXPECT_EQ(trim_to_value(c.state, plan, gang, c.infos, 0).steps.size(), 4u);
}

// On random clusters, whatever the limit: the plan is valid, within the
// rule, never admits less than the greedy's plan trimmed the same way, and
// equals the plan without the rule when that one is within it.
TEST(Refine, ValueTrimOnRandomClustersStaysWithinAndNeverLosesToTheGreedy) {
  int trimmed_nonempty = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto c = make_random_cluster(seed, 16, 4, 140 + static_cast<int>(seed * 2), 12, true, seed % 3 ? 32000 : 8000);
    auto policy = make_policy("bestfit", {});
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = 8 + static_cast<int>(seed % 4) * 8;
    const DefragPlan full = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {});
    for (const double limit : {0.0, 0.5, 1.0, 2.0, 4.0}) {
      PlannerOptions o;
      o.max_moves_per_gpu = limit;
      const DefragPlan p = plan_by_method("planner", c.state, goal, budget, c.infos, *policy, {}, o);
      const auto errors = validate_plan(c.state, p, goal, budget, c.infos);
      ASSERT_TRUE(errors.empty()) << "seed " << seed << " limit " << limit << ": " << errors.front();
      EXPECT_LE(p.moves() * 1000.0, limit * static_cast<double>(p.after.admitted_gpu_milli) + 1e-6)
          << "seed " << seed << " limit " << limit;
      if (p.moves() > 0) ++trimmed_nonempty;
      // Never below what the greedy alone keeps under the same rule.
      const DefragPlan greedy =
          trim_to_value(c.state, plan_defrag(c.state, goal, budget, c.infos), goal, c.infos, limit);
      EXPECT_GE(p.after.admitted_gpu_milli, greedy.after.admitted_gpu_milli) << "seed " << seed;
      // A plan already within the rule is the plan without the rule.
      const double ratio =
          full.moves() == 0
              ? 0
              : full.moves() * 1000.0 / std::max<double>(1, static_cast<double>(full.after.admitted_gpu_milli));
      if (full.moves() == 0 || (full.after.admitted_gpu_milli > 0 && ratio <= limit)) {
        EXPECT_GE(p.after.admitted_gpu_milli, full.after.admitted_gpu_milli) << "seed " << seed;
      }
      // With no move allowed per GPU, only admissions that need no move stay.
      if (limit == 0) {
        EXPECT_EQ(p.moves(), 0) << "seed " << seed;
      }
    }
    // Any method goes through the rule.
    PlannerOptions o;
    o.max_moves_per_gpu = 1;
    const DefragPlan frag = plan_by_method("frag-multi-pod", c.state, goal, budget, c.infos, *policy, {}, o);
    EXPECT_LE(frag.moves() * 1000.0, static_cast<double>(frag.after.admitted_gpu_milli) + 1e-6) << "seed " << seed;
    EXPECT_TRUE(validate_plan(c.state, frag, goal, budget, c.infos).empty()) << "seed " << seed;
  }
  EXPECT_GT(trimmed_nonempty, 0) << "the rule never kept a move";
}

}  // namespace
}  // namespace gpupack
