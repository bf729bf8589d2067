// The seeded 100-node A100-80GB experiment: the MIG-aware slot choice must
// host the whole workload on fewer GPUs than the naive first-free choice.
#include "sim/hw_experiment.h"

#include <gtest/gtest.h>

#include "model/cluster_state.h"

namespace gpupack {
namespace {

TEST(HwExperiment, WorkloadIsSeededAndMixed) {
  HwExperimentOptions o;
  const Workload a = hw_experiment_workload(o), b = hw_experiment_workload(o);
  EXPECT_EQ(a.requests, b.requests);
  int training = 0;
  for (const Request& r : a.requests) training += r.workload_class == WorkloadClass::kTraining;
  EXPECT_GT(training, 400);
  EXPECT_LT(training, 700);
  o.seed = 7;
  EXPECT_NE(hw_experiment_workload(o).requests, a.requests);
}

TEST(HwExperiment, MigAwareNeedsFewerGpusThanFirstFree) {
  HwExperimentOptions o;  // 100 nodes x 8 A100-80GB, 1800 pods, seed 42
  for (const HwClusterMode mode : {HwClusterMode::kMig, HwClusterMode::kMixed}) {
    const HwRunResult naive = run_hw_experiment(mode, MigSlotRule::kFirstFree, o);
    const HwRunResult aware = run_hw_experiment(mode, MigSlotRule::kMigAware, o);
    EXPECT_EQ(naive.gpus_total, 800);
    EXPECT_GE(aware.placed, naive.placed) << to_string(mode);
    EXPECT_LT(aware.gpus_used, naive.gpus_used) << to_string(mode);
    if (mode == HwClusterMode::kMig) {
      EXPECT_EQ(aware.failed, 0);
      // Same pods, same charges: fewer GPUs means fuller ones.
      EXPECT_GT(aware.alloc_used_gpus_pct, naive.alloc_used_gpus_pct);
    }
  }
}

TEST(HwExperiment, MpsModeIsUnaffectedByTheMigRule) {
  HwExperimentOptions o;
  o.node_count = 20;
  o.pod_count = 300;
  const HwRunResult naive = run_hw_experiment(HwClusterMode::kMps, MigSlotRule::kFirstFree, o);
  const HwRunResult aware = run_hw_experiment(HwClusterMode::kMps, MigSlotRule::kMigAware, o);
  EXPECT_EQ(naive.gpus_used, aware.gpus_used);
  EXPECT_EQ(naive.placed, aware.placed);
}

}  // namespace
}  // namespace gpupack
