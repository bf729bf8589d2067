// Decisions by node class (one score per class of identical nodes) equal the
// full walk's decision for decision, for every policy in the registry, with
// index-order and seeded tie-break ranks. The openb traces get the same
// check in tests/golden/node_class_openb_test.cc.
#include <gtest/gtest.h>

#include <memory>

#include "policy/registry.h"
#include "sched/node_class_fixture.h"
#include "sim/random.h"
#include "sim/static_experiment.h"
#include "sim/synthetic.h"

namespace gpupack::testing {
namespace {

TEST(NodeClassDecisions, EqualTheFullWalkForEveryPolicyOnASyntheticCluster) {
  const SyntheticOptions opt{.node_count = 300, .gpu_request_ratio = 0.98, .seed = 2023};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  w.sort_by_name();
  for (const PolicyInfo& p : policy_table()) {
    for (uint64_t seed : {42, 43}) {
      const std::vector<int32_t> order = sample_static_arrivals(w.requests, capacity, 1.3, seed);
      for (bool seeded : {false, true}) {
        const std::vector<int64_t> rank = seeded ? seeded_rank(nodes.size(), seed) : std::vector<int64_t>{};
        const ClassRun walk = schedule_all(nodes, w, order, p.name, seed, rank, false);
        const ClassRun classes = schedule_all(nodes, w, order, p.name, seed, rank, true);
        expect_same(walk, classes, p.name + " seed " + std::to_string(seed) + (seeded ? " seeded rank" : ""));
        const ClassRun class_walk = schedule_all(nodes, w, order, p.name, seed, rank, true, false);
        expect_same(walk, class_walk,
                    p.name + " seed " + std::to_string(seed) + (seeded ? " seeded rank" : "") + " class walk");
        // Not vacuous: identical nodes exist at the end (the synthetic
        // cluster starts with a handful of node kinds).
        EXPECT_LT(classes.classes_at_end, nodes.size()) << p.name;
      }
    }
  }
}

// A rank the state does not know (or a node mask) falls back to the walk,
// and still decides the same.
TEST(NodeClassDecisions, ARankTheStateDoesNotKnowStillDecidesTheSame) {
  const SyntheticOptions opt{.node_count = 120, .gpu_request_ratio = 0.98, .seed = 7};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  const std::vector<int32_t> order = sample_static_arrivals(w.requests, capacity, 1.2, 42);
  std::unique_ptr<Policy> a = make_policy("fgd", {42, target});
  std::unique_ptr<Policy> b = make_policy("fgd", {42, target});
  ClusterState sa(nodes), sb(nodes);  // sb keeps the index order
  Scheduler walk(*a, seeded_rank(nodes.size(), 42));
  walk.set_use_node_classes(false);
  Scheduler mismatched(*b, seeded_rank(nodes.size(), 42));
  for (size_t i = 0; i < order.size(); ++i) {
    const Decision da = walk.schedule(sa, PodId{static_cast<int32_t>(i)}, w.requests[order[i]]);
    const Decision db = mismatched.schedule(sb, PodId{static_cast<int32_t>(i)}, w.requests[order[i]]);
    ASSERT_EQ(da.assignment, db.assignment) << "arrival " << i;
  }
}

// A candidate list (the extender's), in any order, with every candidate's
// score asked for: sharing the result within a class changes nothing, for
// every policy, score for score.
TEST(NodeClassDecisions, CandidateWalksShareResultsWithinAClassAndDecideTheSame) {
  const SyntheticOptions opt{.node_count = 200, .gpu_request_ratio = 0.98, .seed = 11};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  const std::vector<int32_t> order = sample_static_arrivals(w.requests, capacity, 1.1, 42);
  for (const PolicyInfo& p : policy_table()) {
    std::unique_ptr<Policy> a = make_policy(p.name, {42, target});
    std::unique_ptr<Policy> b = make_policy(p.name, {42, target});
    Scheduler walk(*a), shared(*b);
    walk.set_use_node_classes(false);
    ClusterState state(nodes);
    Rng rng(7);
    int shared_classes = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const Request& req = w.requests[order[i]];
      // Candidates: a shuffled two-thirds of the nodes.
      std::vector<NodeId> cands;
      for (int n = 0; n < state.node_count(); ++n)
        if (rng.below(3) != 0) cands.push_back(NodeId{n});
      rng.shuffle(std::span<NodeId>(cands));
      std::vector<ScoredNode> sa, sb;
      const Decision da = walk.evaluate(state, req, cands, &sa);
      const Decision db = shared.evaluate(state, req, cands, &sb);
      ASSERT_EQ(da.assignment, db.assignment) << p.name << " arrival " << i;
      ASSERT_EQ(da.score, db.score) << p.name << " arrival " << i;
      ASSERT_EQ(da.feasible_nodes, db.feasible_nodes) << p.name << " arrival " << i;
      ASSERT_EQ(sa.size(), sb.size()) << p.name << " arrival " << i;
      for (size_t k = 0; k < sa.size(); ++k) {
        ASSERT_EQ(sa[k].node, sb[k].node) << p.name;
        ASSERT_EQ(sa[k].score, sb[k].score) << p.name << " node " << index(sa[k].node);
        ASSERT_EQ(sa[k].assignment, sb[k].assignment) << p.name << " node " << index(sa[k].node);
      }
      if (da.placed()) {
        ASSERT_TRUE(state.bind(PodId{static_cast<int32_t>(i)}, req, da.assignment).is_ok());
      }
      shared_classes = static_cast<int>(state.node_classes().live().size());
    }
    EXPECT_LT(shared_classes, state.node_count()) << p.name << ": no class has two members, the test shares nothing";
  }
}

}  // namespace
}  // namespace gpupack::testing
