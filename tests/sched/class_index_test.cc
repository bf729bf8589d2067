// The per-shape class index (sched/class_index.h) against the walks it
// replaces: after random bind / unbind / rollback sequences a Scheduler that
// kept its index decides exactly as a fresh one (an index built from scratch)
// and as the full walk, node, GPUs, score and feasible count; and it stays
// right across a change log that overflowed, a copy and an assignment of
// the state.
#include "sched/class_index.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "policy/registry.h"
#include "sched/scheduler.h"
#include "sim/random.h"
#include "sim/static_experiment.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

struct Cluster {
  std::vector<NodeSpec> nodes;
  Workload workload;
  std::shared_ptr<const TargetWorkload> target;
};

Cluster make_setup(int node_count, uint64_t seed) {
  Cluster s;
  const SyntheticOptions opt{.node_count = node_count, .gpu_request_ratio = 0.98, .seed = seed};
  s.nodes = synthetic_nodes(opt);
  s.workload = synthetic_workload(opt, ClusterState(s.nodes).gpu_capacity_milli());
  s.target =
      std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(s.workload.requests, s.workload.model_keys));
  return s;
}

::testing::AssertionResult same(const Decision& a, const Decision& b) {
  if (a.assignment == b.assignment && a.score == b.score && a.feasible_nodes == b.feasible_nodes &&
      a.reason == b.reason)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "node " << static_cast<int>(a.assignment.node) << " mask "
                                       << a.assignment.gpu_mask << " score " << a.score << " feasible "
                                       << a.feasible_nodes << " vs node " << static_cast<int>(b.assignment.node)
                                       << " mask " << b.assignment.gpu_mask << " score " << b.score << " feasible "
                                       << b.feasible_nodes;
}

// One policy, three ways of deciding on the same state.
struct Deciders {
  std::unique_ptr<Policy> kept_policy, walk_policy, fresh_policy;
  std::unique_ptr<Scheduler> kept, walk;
  std::vector<int64_t> rank;

  Deciders(const std::string& name, const Cluster& s, std::vector<int64_t> r) : rank(std::move(r)) {
    kept_policy = make_policy(name, {42, s.target});
    walk_policy = make_policy(name, {42, s.target});
    fresh_policy = make_policy(name, {42, s.target});
    kept = std::make_unique<Scheduler>(*kept_policy, rank);
    walk = std::make_unique<Scheduler>(*walk_policy, rank);
    walk->set_use_node_classes(false);
  }
  // Decides `req` all three ways, checks they agree, returns the decision.
  Decision decide(const ClusterState& state, const Request& req, const std::string& what) {
    const Decision k = kept->decide(state, req);
    const Decision w = walk->decide(state, req);
    Scheduler fresh(*fresh_policy, rank);
    const Decision f = fresh.decide(state, req);
    EXPECT_TRUE(same(w, k)) << what << ": kept index vs walk";
    EXPECT_TRUE(same(w, f)) << what << ": fresh index vs walk";
    return k;
  }
};

TEST(ClassIndex, KeptIndexDecidesAsARebuildAndTheWalkThroughRandomBindsUnbindsAndRollbacks) {
  const Cluster s = make_setup(60, 5);
  const std::vector<Request>& reqs = s.workload.requests;
  int index_policies = 0;
  for (const PolicyInfo& p : policy_table()) {
    if (!make_policy(p.name, {42, s.target})->scores_by_state()) continue;
    ++index_policies;
    ClusterState state(s.nodes);
    std::vector<int64_t> rank = seeded_rank(s.nodes.size(), 42);
    state.set_tie_order(rank);
    Deciders d(p.name, s, rank);
    Rng rng(99);
    std::vector<int32_t> bound;
    int32_t next_pod = 0;
    int placed = 0;
    for (int step = 0; step < 400 && !::testing::Test::HasFailure(); ++step) {
      const std::string what = p.name + " step " + std::to_string(step);
      // A small set of shapes, so that each is decided again after changes.
      const Request& req = reqs[rng.below(12)];
      const uint64_t action = rng.below(10);
      if (action < 6) {  // schedule one pod
        const Decision dec = d.decide(state, req, what);
        if (dec.placed()) {
          ASSERT_TRUE(state.bind(PodId{next_pod}, req, dec.assignment).is_ok()) << what;
          bound.push_back(next_pod);
          ++placed;
        }
        ++next_pod;
      } else if (action < 8 && !bound.empty()) {  // a pod leaves
        const size_t k = rng.below(bound.size());
        ASSERT_TRUE(state.unbind(PodId{bound[k]}).is_ok()) << what;
        bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(k));
      } else {  // a what-if: a few binds decided and undone
        const ClusterState::Checkpoint mark = state.checkpoint();
        for (int j = 0; j < 3; ++j) {
          const Request& r = reqs[rng.below(12)];
          const Decision dec = d.decide(state, r, what + " what-if");
          if (dec.placed()) {
            ASSERT_TRUE(state.bind(PodId{100000 + j}, r, dec.assignment).is_ok()) << what;
          }
        }
        state.rollback(mark);
        state.commit();
      }
    }
    EXPECT_GT(placed, 50) << p.name;
    EXPECT_TRUE(state.check_invariants().empty()) << p.name;
  }
  EXPECT_GE(index_policies, 5);
}

// More class changes between two decisions of a shape than the change log
// holds: the index rebuilds and still decides as the walk.
TEST(ClassIndex, AnOverflowedChangeLogRebuildsTheIndex) {
  const Cluster s = make_setup(40, 9);
  ClusterState state(s.nodes);
  Deciders d("fgd", s, {});
  const Request probe = s.workload.requests[0];
  d.decide(state, probe, "first");
  const uint64_t before = state.node_classes().log_end();
  Request churn;
  churn.cpu_milli = 1;
  churn.memory_mib = 1;
  churn.gpu_count = 1;
  churn.gpu_milli = 100;
  // A pod placed and taken away again, over and over: four touches each.
  for (int32_t pod = 0; state.node_classes().log_end() - before <= NodeClasses::kLogCapacity + 10; ++pod) {
    const Decision dec = d.walk->decide(state, churn);
    ASSERT_TRUE(dec.placed());
    ASSERT_TRUE(state.bind(PodId{pod}, churn, dec.assignment).is_ok());
    if (pod % 50 != 0) {
      ASSERT_TRUE(state.unbind(PodId{pod}).is_ok());
    }
    if (pod % 300 == 299) d.decide(state, churn, "churn");  // another shape, decided meanwhile
  }
  EXPECT_FALSE(state.node_classes().log_holds(before));
  d.decide(state, probe, "after the log overflowed");
}

// A copy and an assignment start a new history; an index built for one state
// is never read against another.
TEST(ClassIndex, CopiesAndAssignmentsOfTheStateAreNeverMistakenForTheOriginal) {
  const Cluster s = make_setup(40, 13);
  const std::vector<Request>& reqs = s.workload.requests;
  ClusterState a(s.nodes);
  Deciders d("fgd", s, {});
  for (int i = 0; i < 30; ++i) {
    const Decision dec = d.decide(a, reqs[static_cast<size_t>(i % 5)], "a");
    if (dec.placed()) {
      ASSERT_TRUE(a.bind(PodId{i}, reqs[static_cast<size_t>(i % 5)], dec.assignment).is_ok());
    }
  }
  ClusterState b = a;
  EXPECT_NE(b.node_classes().log_id(), a.node_classes().log_id());
  for (int i = 30; i < 60; ++i) {
    const Decision dec = d.decide(b, reqs[static_cast<size_t>(i % 5)], "b");
    if (dec.placed()) {
      ASSERT_TRUE(b.bind(PodId{i}, reqs[static_cast<size_t>(i % 5)], dec.assignment).is_ok());
    }
  }
  for (int k = 0; k < 5; ++k) d.decide(a, reqs[static_cast<size_t>(k)], "a again");
  const uint64_t a_history = a.node_classes().log_id();
  a = b;  // same address, another state
  EXPECT_NE(a.node_classes().log_id(), a_history);
  for (int k = 0; k < 5; ++k) d.decide(a, reqs[static_cast<size_t>(k)], "a after the assignment");
}

// A class whose state is unchanged keeps its score until rescore() names
// it: then the next sync assesses it again and its old entry is stale.
TEST(ClassIndex, ARescoredClassIsAssessedAgainAndItsOldEntryGoesStale) {
  const GpuModelId g2 = *GpuCatalog::builtin().find("G2");
  ClusterState state({{"a", 8000, 0, 1, g2}, {"b", 16000, 0, 1, g2}, {"c", 16000, 0, 1, g2}});
  const NodeClasses& classes = state.node_classes();
  const int32_t small = classes.class_of(0), large = classes.class_of(1);
  ASSERT_NE(small, large);
  ASSERT_EQ(classes.class_of(2), large);
  std::vector<int64_t> score_of(classes.slots(), 0);
  score_of[static_cast<size_t>(small)] = 5;
  score_of[static_cast<size_t>(large)] = 7;
  int assessed = 0;
  auto assess = [&](const NodeClasses::Live& l, int64_t* score) {
    ++assessed;
    *score = score_of[static_cast<size_t>(l.id)];
    return true;
  };
  ClassIndex index;
  index.sync(state, assess);
  ASSERT_NE(index.best(), nullptr);
  EXPECT_EQ(index.best()->cls, large);
  EXPECT_EQ(index.feasible_nodes(), 3);
  EXPECT_EQ(assessed, 2);
  score_of[static_cast<size_t>(large)] = 3;
  index.sync(state, assess);  // nothing logged, nothing named: the old score stands
  EXPECT_EQ(index.best()->score, 7);
  EXPECT_EQ(assessed, 2);
  index.rescore(large);
  index.sync(state, assess);
  EXPECT_EQ(assessed, 3);
  ASSERT_NE(index.best(), nullptr);
  EXPECT_EQ(index.best()->cls, small);
  EXPECT_EQ(index.best()->score, 5);
  EXPECT_EQ(index.feasible_nodes(), 3);
  // Names piled up by an index no decision reads stay bounded: past one per
  // class id known, the next sync rebuilds (both classes assessed once).
  for (int i = 0; i < 100; ++i) index.rescore(small);
  index.sync(state, assess);
  EXPECT_EQ(assessed, 5);
  EXPECT_EQ(index.best()->cls, small);
  EXPECT_EQ(index.feasible_nodes(), 3);
}

TEST(ClassIndex, AnEmptiedClassIdReusedForAnotherStateGetsANewIncarnationAndEveryMoveIsLogged) {
  NodeClasses c;
  c.reset(2);
  std::vector<uint64_t> hash = {1, 1};
  auto same = [&](int32_t a, int32_t b) { return hash[static_cast<size_t>(a)] == hash[static_cast<size_t>(b)]; };
  auto move = [&](int32_t node, uint64_t h) {
    hash[static_cast<size_t>(node)] = h;
    c.place(node, h, NodeSummary{}, same);
  };
  move(0, 1);
  move(1, 1);
  const int32_t first = c.class_of(0);
  ASSERT_EQ(c.class_of(1), first);
  EXPECT_EQ(c.incarnation(first), 1U);
  EXPECT_EQ(c.log_end(), 2U);  // one touch per join (nothing to leave yet)
  move(0, 2);                  // leaves `first` (touch), a new class (touch)
  move(1, 2);                  // empties `first`, joins node 0's class
  EXPECT_FALSE(c.alive(first));
  EXPECT_EQ(c.log_end(), 6U);
  move(0, 3);  // leaves node 1 behind; a new state takes the emptied id
  EXPECT_EQ(c.class_of(0), first);
  EXPECT_TRUE(c.alive(first));
  EXPECT_EQ(c.incarnation(first), 2U);
  EXPECT_EQ(c.logged(c.log_end() - 1), first);
  EXPECT_TRUE(c.log_holds(0));
  const NodeClasses copy = c;
  EXPECT_NE(copy.log_id(), c.log_id());
  EXPECT_EQ(copy.log_end(), 0U);
  EXPECT_EQ(copy.class_of(0), first);
}

}  // namespace
}  // namespace gpupack
