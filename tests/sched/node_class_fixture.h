// Runs one arrival list through a Scheduler by node class (with the per-shape
// class index, or walking the classes) or by the full walk (optionally scored
// in parallel on a WorkPool), and compares two
// such runs decision for decision (the node class differential tests, unit
// and openb).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/workload.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "util/work_pool.h"

namespace gpupack::testing {

struct ClassRun {
  std::vector<Decision> decisions;
  size_t classes_at_end = 0;
};

inline ClassRun schedule_all(const std::vector<NodeSpec>& nodes, const Workload& w, std::span<const int32_t> order,
                             const std::string& policy_name, uint64_t seed, std::vector<int64_t> rank, bool by_class,
                             bool class_index = true, WorkPool* pool = nullptr) {
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  std::unique_ptr<Policy> policy = make_policy(policy_name, {seed, target});
  ClusterState state(nodes);
  state.set_tie_order(rank);
  Scheduler scheduler(*policy, std::move(rank));
  scheduler.set_use_node_classes(by_class);
  scheduler.set_use_class_index(class_index);
  if (pool != nullptr) {  // parallel scoring, on walks of any size
    scheduler.set_work_pool(pool);
    scheduler.set_parallel_min_distinct(1);
  }
  ClassRun run;
  for (size_t i = 0; i < order.size(); ++i)
    run.decisions.push_back(scheduler.schedule(state, PodId{static_cast<int32_t>(i)}, w.requests[order[i]]));
  run.classes_at_end = state.node_classes().classes().size();
  EXPECT_TRUE(state.check_invariants().empty());
  return run;
}

inline void expect_same(const ClassRun& walk, const ClassRun& classes, const std::string& what) {
  ASSERT_EQ(walk.decisions.size(), classes.decisions.size());
  for (size_t i = 0; i < walk.decisions.size(); ++i) {
    const Decision& a = walk.decisions[i];
    const Decision& b = classes.decisions[i];
    ASSERT_TRUE(a.assignment == b.assignment && a.score == b.score && a.feasible_nodes == b.feasible_nodes &&
                a.reason == b.reason)
        << what << ": arrival " << i << " walk node " << static_cast<int>(a.assignment.node) << " mask "
        << a.assignment.gpu_mask << " score " << a.score << " feasible " << a.feasible_nodes << "; classes node "
        << static_cast<int>(b.assignment.node) << " mask " << b.assignment.gpu_mask << " score " << b.score
        << " feasible " << b.feasible_nodes;
  }
}

}  // namespace gpupack::testing
