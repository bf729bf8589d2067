// Decisions by node class (through the per-shape class index, and walking the
// classes) equal the full walk's on the four openb traces: every policy,
// seeds 42 and 43 (arrivals and tie-break ranks as the experiment draws
// them, tune 1.3), decision for decision; and for seed 42 the full walk
// scored in parallel on two threads equals the one-thread walk.
#include <gtest/gtest.h>

#include "golden/openb_fixture.h"
#include "policy/registry.h"
#include "sched/node_class_fixture.h"
#include "sim/random.h"
#include "sim/static_experiment.h"

namespace gpupack::testing {
namespace {

class NodeClassOpenb : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeClassOpenb, DecisionsEqualTheFullWalk) {
  GPUPACK_REQUIRE_SHARED(kOpenbDir + "/" + GetParam() + ".csv");
  const OpenbTrace t = load_openb(GetParam());
  const int64_t capacity = ClusterState(t.nodes).gpu_capacity_milli();
  WorkPool pool(2);
  for (const PolicyInfo& p : policy_table()) {
    for (uint64_t seed : {42, 43}) {
      const std::vector<int32_t> order = sample_static_arrivals(t.pods.requests, capacity, 1.3, seed);
      const std::vector<int64_t> rank = seeded_rank(t.nodes.size(), seed);
      const ClassRun walk = schedule_all(t.nodes, t.pods, order, p.name, seed, rank, false);
      const ClassRun classes = schedule_all(t.nodes, t.pods, order, p.name, seed, rank, true);
      expect_same(walk, classes, GetParam() + " " + p.name + " seed " + std::to_string(seed));
      const ClassRun class_walk = schedule_all(t.nodes, t.pods, order, p.name, seed, rank, true, false);
      expect_same(walk, class_walk, GetParam() + " " + p.name + " seed " + std::to_string(seed) + " class walk");
      if (seed == 42) {  // the full walk scored on two threads
        const ClassRun parallel = schedule_all(t.nodes, t.pods, order, p.name, seed, rank, false, true, &pool);
        expect_same(walk, parallel, GetParam() + " " + p.name + " seed 42 parallel walk");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, NodeClassOpenb,
                         ::testing::Values("openb_pod_list_default", "openb_pod_list_gpushare100",
                                           "openb_pod_list_multigpu50", "openb_pod_list_gpuspec33"));

}  // namespace
}  // namespace gpupack::testing
