// The dynamic experiment runs every policy x seed; each seed changes the
// generated workload and the tie-break ranks, and the runs are reproducible.
#include "sim/dynamic_experiment.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

DynamicExperimentSpec small_spec() {
  DynamicExperimentSpec spec;
  const GangCluster c = gang_cluster(8, 8, 4);
  spec.nodes = c.nodes;
  spec.options.levels = {{"rack", c.rack_of_node}};
  GangWorkloadOptions g;
  g.jobs = 60;
  spec.generated = g;
  spec.policies = {"fgd", "bestfit"};
  spec.seeds = {3, 4, 5};
  return spec;
}

TEST(DynamicExperiment, RunsEveryPolicyAndEverySeedInOrder) {
  const DynamicExperimentSpec spec = small_spec();
  int callbacks = 0;
  const auto runs = run_dynamic_experiment(spec, [&](const DynamicExperimentRun&) { ++callbacks; });
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(callbacks, 6);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].policy, spec.policies[i / 3]);
    EXPECT_EQ(runs[i].seed, spec.seeds[i % 3]);
    EXPECT_EQ(runs[i].label, runs[i].policy + " seed " + std::to_string(runs[i].seed));
    EXPECT_EQ(runs[i].summary.label, runs[i].label);
    EXPECT_EQ(runs[i].jobs, 60u);
  }
  // Each seed generates its own workload: the submission times differ.
  EXPECT_NE(runs[0].result.jobs[1].submit_s, runs[1].result.jobs[1].submit_s);
  // The same seed gives the same workload under every policy.
  EXPECT_EQ(runs[0].result.jobs[1].submit_s, runs[3].result.jobs[1].submit_s);
  // Reproducible.
  const auto again = run_dynamic_experiment(spec);
  for (size_t i = 0; i < runs.size(); ++i) {
    ASSERT_EQ(runs[i].result.jobs.size(), again[i].result.jobs.size());
    for (size_t j = 0; j < runs[i].result.jobs.size(); ++j)
      EXPECT_EQ(runs[i].result.jobs[j].start_s, again[i].result.jobs[j].start_s);
  }
}

TEST(DynamicExperiment, OneSeedKeepsThePlainLabelAndBadSpecsAreRefused) {
  DynamicExperimentSpec spec = small_spec();
  spec.seeds = {9};
  spec.policies = {"firstfit"};
  spec.label_suffix = "+fifo";
  EXPECT_EQ(run_dynamic_experiment(spec).at(0).label, "firstfit+fifo");
  spec.policies = {"nope"};
  EXPECT_THROW(run_dynamic_experiment(spec), std::invalid_argument);
  spec.policies = {"fgd"};
  spec.seeds.clear();
  EXPECT_THROW(run_dynamic_experiment(spec), std::invalid_argument);
  spec.seeds = {1};
  spec.workload = DynamicWorkload{};
  EXPECT_THROW(run_dynamic_experiment(spec), std::invalid_argument);  // fixed and generated at once
}

}  // namespace
}  // namespace gpupack
