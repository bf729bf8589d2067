// The static experiment's reports (src/sim/report.h) and the final-state
// hook the report.html maps come from.
#include "sim/report.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "model/cluster_state.h"
#include "sim/experiment.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

ExperimentSpec small(double tune) {
  SyntheticOptions opt;
  opt.node_count = 30;
  ExperimentSpec spec;
  spec.nodes = synthetic_nodes(opt);
  spec.trace = synthetic_workload(opt, ClusterState(spec.nodes).gpu_capacity_milli());
  spec.trace.sort_by_name();
  spec.policies = {"bestfit", "fgd"};
  spec.seeds = {42};
  spec.tune = tune;
  spec.threads = 1;
  return spec;
}

TEST(Report, ARunThatStopsShortOf130PercentShowsDashesNotNan) {
  const auto summary = summarize(run_experiment(small(1.0)));
  const std::string table = format_comparison_table(summary);
  EXPECT_EQ(table.find("nan"), std::string::npos) << table;
  EXPECT_NE(table.find(" - "), std::string::npos) << table;
  EXPECT_NE(table.find("<- best"), std::string::npos) << table;
  for (const std::string& svg : {allocation_svg(summary, "a"), fragmentation_svg(summary, "f")}) {
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("at 130)"), std::string::npos) << "the legend names the last point the runs reached";
    EXPECT_NE(svg.find("% at 10"), std::string::npos);  // 100 or a little below
  }
}

TEST(Report, EveryJobHandsItsStateAfterTheArrivalsToTheHook) {
  ExperimentSpec spec = small(1.3);
  spec.seeds = {1, 2};
  std::mutex mu;
  std::set<size_t> jobs;
  size_t named = 0;
  spec.on_final_state = [&](size_t job, const ClusterState& state, std::span<const std::string> names) {
    std::lock_guard lock(mu);
    jobs.insert(job);
    EXPECT_GT(state.bound_pod_count(), 0);
    for (PodId p : state.bound_pods()) named += index(p) < names.size() && !names[index(p)].empty();
  };
  const auto runs = run_experiment(spec);
  EXPECT_EQ(jobs, (std::set<size_t>{0, 1, 2, 3}));
  size_t bound = 0;
  for (const auto& r : runs)
    for (const auto& a : r.placements) bound += valid(a.node);
  EXPECT_EQ(named, bound) << "every bound pod has its trace name";
}

}  // namespace
}  // namespace gpupack
