// Parallel scoring (Scheduler::set_work_pool): a walk split across the
// pool's lanes decides exactly as the one-thread walk, node, GPUs, score,
// feasible count and every listed score in order, for every policy, on full
// walks, class walks, candidate lists and hardware requests. Labelled for
// the ThreadSanitizer build too (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mig/mig_geometry.h"
#include "policy/registry.h"
#include "sched/node_class_fixture.h"
#include "sched/scheduler.h"
#include "sim/random.h"
#include "sim/static_experiment.h"
#include "sim/synthetic.h"
#include "util/work_pool.h"

namespace gpupack::testing {
namespace {

struct Pair {
  std::unique_ptr<Policy> one_policy, many_policy;
  std::unique_ptr<Scheduler> one, many;
};

Pair make_pair(const std::string& policy, const std::shared_ptr<const TargetWorkload>& target, WorkPool& pool,
               bool by_class) {
  Pair p;
  p.one_policy = make_policy(policy, {42, target});
  p.many_policy = make_policy(policy, {42, target});
  p.one = std::make_unique<Scheduler>(*p.one_policy);
  p.many = std::make_unique<Scheduler>(*p.many_policy);
  for (Scheduler* s : {p.one.get(), p.many.get()}) {
    s->set_use_node_classes(by_class);
    s->set_use_class_index(false);  // class decisions walk the classes
  }
  p.many->set_work_pool(&pool);
  p.many->set_parallel_min_distinct(1);  // small clusters split too
  return p;
}

void expect_same_decision(const Decision& a, const Decision& b, const std::string& what) {
  ASSERT_EQ(a.assignment, b.assignment) << what;
  ASSERT_EQ(a.score, b.score) << what;
  ASSERT_EQ(a.feasible_nodes, b.feasible_nodes) << what;
  ASSERT_EQ(a.reason, b.reason) << what;
}

void expect_same_list(const std::vector<ScoredNode>& a, const std::vector<ScoredNode>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].node, b[k].node) << what << " position " << k;
    ASSERT_EQ(a[k].score, b[k].score) << what << " node " << index(a[k].node);
    ASSERT_EQ(a[k].assignment, b[k].assignment) << what << " node " << index(a[k].node);
  }
}

// Full walks and class walks, for every policy, with a three-lane pool.
TEST(ParallelScoring, EveryPolicyDecidesAsTheOneThreadWalk) {
  const SyntheticOptions opt{.node_count = 400, .gpu_request_ratio = 0.98, .seed = 2024};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  w.sort_by_name();
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  const std::vector<int32_t> order = sample_static_arrivals(w.requests, capacity, 1.2, 42);
  WorkPool pool(3);
  for (const PolicyInfo& info : policy_table()) {
    for (bool by_class : {false, true}) {
      Pair p = make_pair(info.name, target, pool, by_class);
      ClusterState a(nodes), b(nodes);
      int placed = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        const PodId pod{static_cast<int32_t>(i)};
        const Request& req = w.requests[static_cast<size_t>(order[i])];
        const Decision da = p.one->schedule(a, pod, req);
        const Decision db = p.many->schedule(b, pod, req);
        expect_same_decision(da, db,
                             info.name + (by_class ? " by class" : " full walk") + " arrival " + std::to_string(i));
        placed += da.placed() ? 1 : 0;
      }
      EXPECT_GT(placed, 100) << info.name;
      EXPECT_EQ(p.one->parallel_walks(), 0u);
      if (p.many_policy->parallel_score())
        EXPECT_GT(p.many->parallel_walks(), order.size() / 2) << info.name << ": the walks did not split";
      else
        EXPECT_EQ(p.many->parallel_walks(), 0u) << info.name << " scores on one thread only";
    }
  }
}

// Candidate lists (the extender's), shuffled, every score listed, classes
// sharing one assessment: the same list, scores and order. A list naming a
// node twice stays on one thread and still decides the same.
TEST(ParallelScoring, CandidateListsListTheSameScoresInTheSameOrder) {
  const SyntheticOptions opt{.node_count = 300, .gpu_request_ratio = 0.98, .seed = 5};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  const std::vector<int32_t> order = sample_static_arrivals(w.requests, capacity, 1.1, 43);
  WorkPool pool(2);
  for (const PolicyInfo& info : policy_table()) {
    for (bool share_classes : {false, true}) {
      Pair p = make_pair(info.name, target, pool, share_classes);
      ClusterState state(nodes);
      Rng rng(9);
      for (size_t i = 0; i < order.size(); ++i) {
        const Request& req = w.requests[static_cast<size_t>(order[i])];
        std::vector<NodeId> cands;
        for (int n = 0; n < state.node_count(); ++n)
          if (rng.below(4) != 0) cands.push_back(NodeId{n});
        rng.shuffle(std::span<NodeId>(cands));
        const bool twice = i % 7 == 3 && !cands.empty();
        if (twice) cands.push_back(cands.front());
        const uint64_t walks_before = p.many->parallel_walks();
        std::vector<ScoredNode> sa, sb;
        const Decision da = p.one->evaluate(state, req, cands, &sa);
        const Decision db = p.many->evaluate(state, req, cands, &sb);
        const std::string what = info.name + (share_classes ? " classes" : "") + " arrival " + std::to_string(i);
        expect_same_decision(da, db, what);
        expect_same_list(sa, sb, what);
        if (twice) {
          ASSERT_EQ(p.many->parallel_walks(), walks_before) << what << ": a duplicate went parallel";
        }
        if (da.placed()) {
          ASSERT_TRUE(state.bind(PodId{static_cast<int32_t>(i)}, req, da.assignment).is_ok());
        }
      }
      if (p.many_policy->parallel_score()) {
        EXPECT_GT(p.many->parallel_walks(), 0u) << info.name;
      }
    }
  }
}

GpuSetup gpu_setup(GpuMode m, int g) {
  GpuSetup s;
  s.mode = m;
  if (m == GpuMode::kMps) s.mps_replicas = 7;
  s.numa = static_cast<int8_t>(g / 4);
  s.nvlink_domain = static_cast<int8_t>(g / 4);
  s.pcie_switch = static_cast<int8_t>(g / 2);
  return s;
}

// Nodes with hardware setup (MIG, MPS, time-slicing, NVLink, NUMA) and
// hardware requests: each lane keeps its own placement scratch.
TEST(ParallelScoring, HardwareRequestsDecideAsTheOneThreadWalk) {
  const GpuModelId a100 = *GpuCatalog::builtin().find("A100-80GB");
  const GpuMode modes[] = {GpuMode::kShared, GpuMode::kMig, GpuMode::kMps, GpuMode::kTimeSlice, GpuMode::kExclusive};
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 160; ++i) {
    NodeSpec n{"hw-" + std::to_string(i), 96000 + 1000 * (i % 5), 1024 * 1024, 8, a100};
    for (int g = 0; g < 8; ++g) n.gpus.push_back(gpu_setup(modes[(i + g / 2) % 5], g));
    n.numa = {{48000, 512 * 1024}, {48000 + 1000 * (i % 5), 512 * 1024}};
    nodes.push_back(std::move(n));
  }
  std::vector<Request> reqs;
  for (int k = 0; k < 40; ++k) {
    Request whole{2000, 4096, 1 + k % 4, 1000, 0};
    whole.gpu_scope = k % 2 ? GpuScope::kNvlink : GpuScope::kPcieSwitch;
    whole.numa_aligned = k % 3 == 0;
    reqs.push_back(whole);
    Request mig{1000, 2048, 1, 100, 0};
    mig.mig_profile = k % 2 ? "1g.10gb" : "3g.40gb";
    reqs.push_back(mig);
    Request mps{500, 1024, 1, 250, 0};
    mps.modes = mode_bit(GpuMode::kMps) | mode_bit(GpuMode::kTimeSlice);
    mps.gpu_memory_mib = 8192;
    reqs.push_back(mps);
  }
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(reqs, {}));
  WorkPool pool(2);
  for (const PolicyInfo& info : policy_table()) {
    Pair p = make_pair(info.name, target, pool, false);
    ClusterState a(nodes), b(nodes);
    int placed = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const PodId pod{static_cast<int32_t>(i)};
      const Decision da = p.one->schedule(a, pod, reqs[i]);
      const Decision db = p.many->schedule(b, pod, reqs[i]);
      expect_same_decision(da, db, info.name + " request " + std::to_string(i));
      placed += da.placed() ? 1 : 0;
    }
    EXPECT_GT(placed, 60) << info.name;
    if (p.many_policy->parallel_score()) {
      EXPECT_GT(p.many->parallel_walks(), 0u) << info.name;
    }
  }
}

// The default threshold: a full walk of 2,100 distinct nodes splits, a
// 500-node candidate list does not.
TEST(ParallelScoring, OnlyWalksOfManyDistinctNodesSplitByDefault) {
  const SyntheticOptions opt{.node_count = Scheduler::kParallelMinDistinct + 52, .gpu_request_ratio = 0.98, .seed = 3};
  const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  Workload w = synthetic_workload(opt, capacity);
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(w.requests, w.model_keys));
  std::unique_ptr<Policy> one = make_policy("fgd", {42, target}), many = make_policy("fgd", {42, target});
  WorkPool pool(2);
  Scheduler a(*one), b(*many);
  a.set_use_node_classes(false);
  b.set_use_node_classes(false);
  b.set_work_pool(&pool);
  ClusterState sa(nodes), sb(nodes);
  for (int i = 0; i < 50; ++i) {
    const Request& req = w.requests[static_cast<size_t>(i)];
    expect_same_decision(a.schedule(sa, PodId{i}, req), b.schedule(sb, PodId{i}, req), "arrival " + std::to_string(i));
  }
  EXPECT_EQ(b.parallel_walks(), 50u);
  std::vector<NodeId> few;
  for (int n = 0; n < 500; ++n) few.push_back(NodeId{n * 3});
  expect_same_decision(a.evaluate(sa, w.requests[60], few, nullptr), b.evaluate(sb, w.requests[60], few, nullptr),
                       "500 candidates");
  EXPECT_EQ(b.parallel_walks(), 50u);
}

}  // namespace
}  // namespace gpupack::testing
