#include "sim/static_experiment.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sim/curves.h"
#include "sim/experiment.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

std::vector<Request> small_trace() {
  std::vector<Request> t;
  for (int i = 0; i < 10; ++i) t.push_back({1000, 0, 1, 100 * (i + 1), 0});  // 5,500 milli in all
  t.push_back({2000, 0, 0, 0, 0});
  return t;
}

TEST(SampleStaticArrivals, TunesUpWithCopiesUntilTheNextDrawWouldOvershoot) {
  const auto trace = small_trace();
  const auto order = sample_static_arrivals(trace, 10000, 1.3, 42);  // target 13,000 milli
  ASSERT_GT(order.size(), trace.size());
  // The originals come first, each exactly once.
  std::vector<int> seen(trace.size(), 0);
  for (size_t i = 0; i < trace.size(); ++i) ++seen[order[i]];
  for (int c : seen) EXPECT_EQ(c, 1);
  int64_t total = 0;
  for (int32_t i : order) total += trace[i].total_gpu_milli();
  EXPECT_LE(total, 13000);
  EXPECT_GT(total, 13000 - 1000);  // stopped by a draw of at most 1000 milli
  EXPECT_EQ(order, sample_static_arrivals(trace, 10000, 1.3, 42));
  EXPECT_NE(order, sample_static_arrivals(trace, 10000, 1.3, 43));
}

TEST(SampleStaticArrivals, RemovesPodsWhenTheTraceExceedsTheTarget) {
  const auto trace = small_trace();
  const auto order = sample_static_arrivals(trace, 1000, 1.0, 7);
  int64_t total = 0;
  for (int32_t i : order) total += trace[i].total_gpu_milli();
  EXPECT_LE(total, 1000);
  EXPECT_LT(order.size(), trace.size());
}

TEST(RunStatic, RecordsArrivedAllocatedAndFailuresPerArrival) {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  const std::vector<NodeSpec> nodes = {{"a", 4000, 0, 2, t4}};
  const std::vector<Request> arrivals = {{1000, 0, 1, 1000, 0}, {1000, 0, 2, 1000, 0}, {1000, 0, 1, 500, 0}};
  auto target = std::make_shared<TargetWorkload>(TargetWorkload::from_requests(arrivals));
  auto policy = make_policy("bestfit", {1, target});
  const StaticRunResult r = run_static(nodes, arrivals, *policy, {}, *target);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].arrived_milli, 1000);
  EXPECT_EQ(r.steps[1].arrived_milli, 3000);  // failed pods still arrive
  EXPECT_EQ(r.steps[1].used_milli, 1000);
  EXPECT_EQ(r.steps[2].used_milli, 1500);
  EXPECT_EQ(r.failed_pods, 1);
  EXPECT_FALSE(valid(r.placements[1].node));
  EXPECT_DOUBLE_EQ(r.final_alloc_pct(), 75.0);
}

TEST(RunStatic, SplitsTheFreeCapacityIntoWhatThePlacedSizesForceAndWhatThePlacementLeft) {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  const std::vector<NodeSpec> nodes = {{"a", 64000, 0, 2, t4}};
  // Four 470s and a 320: two GPUs hold 470 + 470 each (60 free apiece), the
  // 320 fails. The placed sizes force 2 x 60 free; the placement left none.
  std::vector<Request> arrivals(4, Request{1000, 0, 1, 470, 0});
  arrivals.push_back({1000, 0, 1, 320, 0});
  auto target = std::make_shared<TargetWorkload>(TargetWorkload::from_requests(arrivals));
  auto policy = make_policy("bestfit", {1, target});
  StaticRunResult r = run_static(nodes, arrivals, *policy, {}, *target);
  EXPECT_EQ(r.failed_pods, 1);
  std::optional<double> waste = placed_size_waste_milli(arrivals, r.placements);
  ASSERT_TRUE(waste.has_value());
  EXPECT_NEAR(*waste, 120.0, 1e-6);
  // Whatever the placement of 470, 320, 470 (740 free), the placed sizes
  // force only what their best packing leaves: 470 + 470 on one GPU, the
  // 320 a third of a GPU that three 320s would fill: 1000 x 4/3 - 1260.
  const std::vector<Request> spread = {{1000, 0, 1, 470, 0}, {1000, 0, 1, 320, 0}, {1000, 0, 1, 470, 0}};
  auto spread_policy = make_policy("spread", {1, target});
  r = run_static(nodes, spread, *spread_policy, {}, *target);
  EXPECT_EQ(r.failed_pods, 0);
  waste = placed_size_waste_milli(spread, r.placements);
  ASSERT_TRUE(waste.has_value());
  EXPECT_NEAR(*waste, 1000.0 * 4 / 3 - 1260.0, 1e-6);
  // A pod asking for a MIG slice is not measured by its milli: no split.
  std::vector<Request> mig = arrivals;
  mig[0].mig_profile = "1g.10gb";
  mig[0].gpu_milli = 142;
  auto mig_policy = make_policy("bestfit", {1, target});
  const GpuModelId a100 = *GpuCatalog::builtin().find("A100-40GB");
  r = run_static({{"m", 64000, 0, 2, a100}}, mig, *mig_policy, {}, *target);
  EXPECT_FALSE(placed_size_waste_milli(mig, r.placements).has_value());
}

TEST(BucketCurve, AveragesPerArrivedPercentAndFillsGapsFromNeighbours) {
  StaticRunResult r;
  r.capacity_milli = 1000;
  r.steps = {{0, 0, 0}, {10, 10, 5}, {20, 20, 5}, {40, 30, 10}};  // 0%, 1%, 2%, 4%
  const Curve c = bucket_curve(r);
  EXPECT_DOUBLE_EQ(c.alloc_pct[0], 0.0);
  EXPECT_DOUBLE_EQ(c.alloc_pct[1], 1.0);
  EXPECT_DOUBLE_EQ(c.alloc_pct[3], (2.0 + 3.0) / 2);  // empty: neighbours 2 and 4
  EXPECT_DOUBLE_EQ(c.frag_pct[4], 1.0);
  EXPECT_TRUE(std::isnan(c.alloc_pct[10]));
}

TEST(Experiment, RunsEveryPolicyAndSeedInParallelDeterministically) {
  SyntheticOptions opt;
  opt.node_count = 60;
  ExperimentSpec spec;
  spec.nodes = synthetic_nodes(opt);
  spec.trace = synthetic_workload(opt, ClusterState(spec.nodes).gpu_capacity_milli());
  spec.trace.sort_by_name();
  spec.policies = policy_names();
  spec.seeds = {1, 2};
  spec.threads = 2;
  const auto a = run_experiment(spec);
  spec.threads = 1;
  const auto b = run_experiment(spec);
  ASSERT_EQ(a.size(), policy_names().size() * 2);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].policy, policy_names()[i / 2]);
    EXPECT_EQ(a[i].placements, b[i].placements) << a[i].policy;
    EXPECT_GT(a[i].final_alloc_pct(), 50.0) << a[i].policy;
    // The sizes force part of the free milli, never more than all of it.
    ASSERT_TRUE(a[i].size_waste_milli.has_value()) << a[i].policy;
    EXPECT_GT(*a[i].size_waste_milli, 0.0) << a[i].policy;
    EXPECT_LE(*a[i].size_waste_milli, a[i].capacity_milli - a[i].steps.back().used_milli + 1e-6) << a[i].policy;
  }
  spec.policies = {"nope"};
  EXPECT_THROW(run_experiment(spec), std::invalid_argument);
}

TEST(Synthetic, ClusterAndWorkloadFollowTheDocumentedMix) {
  SyntheticOptions opt;
  const auto nodes = synthetic_nodes(opt);
  ASSERT_EQ(nodes.size(), 1000u);
  const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
  const Workload w = synthetic_workload(opt, capacity);
  EXPECT_GE(w.total_gpu_milli(), static_cast<int64_t>(0.98 * capacity));
  int cpu_only = 0, shared = 0;
  for (const Request& r : w.requests) {
    EXPECT_EQ(r.validate(), "");
    cpu_only += !r.is_gpu();
    shared += r.is_shared();
  }
  EXPECT_NEAR(static_cast<double>(cpu_only) / w.size(), 0.138, 0.02);  // 1,056 of 7,645 weight
  EXPECT_NEAR(static_cast<double>(shared) / w.size(), 0.364, 0.02);    // 2,779 of 7,645
}

}  // namespace
}  // namespace gpupack
