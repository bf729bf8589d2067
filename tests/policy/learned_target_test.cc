// "+learned": a target-workload policy whose target is the requests it has
// been asked to place, rebuilt when their count doubles (policy/learned_target.h).
#include "policy/learned_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/registry.h"
#include "sched/filter.h"
#include "sched/scheduler.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");

std::string error_of(std::string_view name) {
  try {
    make_policy(name, {1, std::make_shared<const TargetWorkload>()});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(LearnedTarget, TheRegistryTakesTheSuffixOnlyOnPoliciesWithATarget) {
  for (const char* name : {"fgd", "capfrag", "poolfrag"}) {
    const std::string learned = std::string(name) + "+learned";
    EXPECT_EQ(std::string(make_policy(learned, {1, nullptr})->name()), learned);
  }
  EXPECT_THAT(error_of("firstfit+learned"), ::testing::HasSubstr("'firstfit' has no target workload to learn"));
  EXPECT_THAT(error_of("nope+learned"), ::testing::HasSubstr("unknown policy 'nope' in 'nope+learned'"));
  EXPECT_THAT(error_of("+learned"), ::testing::HasSubstr("unknown policy '+learned'"));
  EXPECT_THAT(error_of("fgd+learned+learned"), ::testing::HasSubstr("unknown policy 'fgd+learned'"));
}

TEST(LearnedTarget, RebuildsOnTheRequestsSoFarWhenTheirCountDoubles) {
  auto policy = make_policy("fgd+learned", {1, nullptr});
  auto& learned = dynamic_cast<LearnedTargetPolicy&>(*policy);
  EXPECT_TRUE(learned.target().classes.empty());
  EXPECT_EQ(learned.scoring_epoch(), 0u);
  const ClusterState s({{"n0", 64000, 0, 8, kG2}});
  const std::vector<Request> reqs = {
      {4000, 0, 1, 1000, 0}, {2000, 0, 1, 470, 0}, {2000, 0, 1, 470, 0}, {8000, 0, 2, 1000, 0}, {1000, 0, 0, 0, 0}};
  // Target size (requests counted) and epoch after each prepare: rebuilt at 1, 2 and 4.
  const std::vector<int64_t> counted = {1, 2, 2, 4, 4};
  const std::vector<uint64_t> epochs = {1, 2, 2, 3, 3};
  for (size_t i = 0; i < reqs.size(); ++i) {
    learned.prepare(s, reqs[i]);
    EXPECT_EQ(learned.arrivals(), i + 1);
    int64_t total = 0;
    for (const TargetClass& c : learned.target().classes) total += c.count;
    EXPECT_EQ(total, counted[i]) << "after request " << i;
    EXPECT_EQ(learned.scoring_epoch(), epochs[i]) << "after request " << i;
  }
  // After 4: classes 470 (2 pods) first, then the 1-GPU and the 2-GPU ones.
  ASSERT_EQ(learned.target().classes.size(), 3u);
  EXPECT_EQ(learned.target().classes[0].gpu_milli, 470);
  EXPECT_EQ(learned.target().classes[0].count, 2);
}

TEST(LearnedTarget, ScoresAsTheInnerPolicyOnTheSameTarget) {
  SyntheticOptions o;
  o.node_count = 40;
  ClusterState state(synthetic_nodes(o));
  const Workload w = synthetic_workload(o, state.gpu_capacity_milli());
  ASSERT_GT(w.requests.size(), 60u);
  auto learned = make_policy("capfrag+learned", {1, nullptr});
  Scheduler sched(*learned);
  for (size_t i = 0; i < 40; ++i) sched.schedule(state, PodId{static_cast<int32_t>(i)}, w.requests[i]);
  // 40 prepares: the target is the first 32 requests (rebuilt at 32, next at 64).
  const std::vector<Request> first32(w.requests.begin(), w.requests.begin() + 32);
  auto reference =
      make_policy("capfrag", {1, std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(first32))});
  const Request& next = w.requests[40];
  learned->prepare(state, next);
  reference->prepare(state, next);
  int compared = 0;
  for (int n = 0; n < state.node_count(); ++n) {
    if (!fits_plain(state, NodeId{n}, next)) continue;
    const NodeScore a = learned->score(state, NodeId{n}, next), b = reference->score(state, NodeId{n}, next);
    EXPECT_EQ(a.score, b.score) << "node " << n;
    EXPECT_EQ(a.gpu_mask, b.gpu_mask) << "node " << n;
    ++compared;
  }
  EXPECT_GT(compared, 5);
}

// The scheduler keeps each class's score across decisions (its class index);
// a rebuilt target changes scores, so it must drop them (scoring_epoch()).
// The same arrivals decided by class and by a plain walk of every node agree.
// dualfrag's whole-node reserve changes its epoch between rebuilds too.
TEST(LearnedTarget, DecisionsByNodeClassMatchThePlainWalkAcrossRebuilds) {
  SyntheticOptions o;
  o.node_count = 120;
  const std::vector<NodeSpec> nodes = synthetic_nodes(o);
  for (const char* name : {"capfrag+learned", "dualfrag+learned"}) {
    ClusterState by_class(nodes), plain(nodes);
    const Workload w = synthetic_workload(o, by_class.gpu_capacity_milli());
    auto p1 = make_policy(name, {1, nullptr});
    auto p2 = make_policy(name, {1, nullptr});
    Scheduler s1(*p1), s2(*p2);
    s2.set_use_node_classes(false);
    int placed = 0;
    for (size_t i = 0; i < w.requests.size(); ++i) {
      const PodId pod{static_cast<int32_t>(i)};
      const Decision a = s1.schedule(by_class, pod, w.requests[i]);
      const Decision b = s2.schedule(plain, pod, w.requests[i]);
      ASSERT_EQ(a.assignment.node, b.assignment.node) << name << ", arrival " << i;
      ASSERT_EQ(a.assignment.gpu_mask, b.assignment.gpu_mask) << name << ", arrival " << i;
      placed += a.placed();
    }
    EXPECT_GT(placed, 200) << name;
  }
}

}  // namespace
}  // namespace gpupack
