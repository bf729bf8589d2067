// End-to-end: simulate with --cluster/--workload, mig-plan, hw-experiment.
#include <gtest/gtest.h>
#include "support/cli_runner.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mig/mig_parted_config.h"

namespace {

using gpupack::testing::run_gpupack;
using gpupack::testing::RunResult;

const std::string kEx = std::string(GPUPACK_SOURCE_DIR) + "/examples/hardware/";

TEST(HwCli, SimulateAcceptsClusterYamlAndWorkloadFiles) {
  for (const char* w : {"workload.yaml", "workload.csv"}) {
    const RunResult r = run_gpupack("simulate --cluster " + kEx + "cluster.yaml --workload " + kEx + w +
                                    " --policy fgd,bestfit,firstfit --tune 0.5 --quiet --threads 1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("fgd"), std::string::npos) << r.output;
  }
  // MIG slices and sharing modes are not GPU milli alone: no packing bound.
  const auto out = std::filesystem::temp_directory_path() / "gpupack_hw_cli_bound";
  const RunResult r = run_gpupack("simulate --cluster " + kEx + "cluster.yaml --workload " + kEx +
                                  "workload.yaml --policy fgd --tune 0.5 --threads 1 --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("packing bound"), std::string::npos) << r.output;
  std::ifstream in(out / "summary.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"mix_packing_bound_pct\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"size_waste_pct\": null"), std::string::npos) << json;
}

TEST(HwCli, SimulateRejectsBadHardwareInput) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_hw_cli";
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "bad.yaml").string();
  std::ofstream(bad) << "pods:\n  - {name: a, num_gpu: 1, gpu_milli: 2000}\n";
  const RunResult r = run_gpupack("simulate --cluster " + kEx + "cluster.yaml --workload " + bad + " --quiet");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad.yaml:2"), std::string::npos) << r.output;
  const RunResult both = run_gpupack("simulate --cluster " + kEx + "cluster.yaml --nodes x.csv --workload " + bad);
  EXPECT_NE(both.exit_code, 0);
}

TEST(HwCli, MigPlanWritesAValidConfigAndLabels) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_hw_cli";
  std::filesystem::create_directories(dir);
  const std::string cfg = (dir / "mig.yaml").string(), labels = (dir / "labels.txt").string();
  const RunResult r = run_gpupack("mig-plan --cluster " + kEx + "cluster.yaml --demand " + kEx + "demand.yaml -o " +
                                  cfg + " --labels-out " + labels);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPUs changed"), std::string::npos) << r.output;
  std::stringstream yaml, lab;
  yaml << std::ifstream(cfg).rdbuf();
  lab << std::ifstream(labels).rdbuf();
  EXPECT_TRUE(gpupack::validate_mig_parted_config(yaml.str()).empty()) << yaml.str();
  EXPECT_NE(lab.str().find("nvidia.com/mig.config=gpupack-"), std::string::npos) << lab.str();
  const RunResult bad = run_gpupack("mig-plan --cluster " + kEx + "cluster.yaml --demand " + kEx + "workload.yaml");
  EXPECT_NE(bad.exit_code, 0);
}

TEST(HwCli, HwExperimentPrintsTheTable) {
  const RunResult r = run_gpupack("hw-experiment --nodes 10 --pods 150");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mig-aware"), std::string::npos);
  EXPECT_NE(r.output.find("first-free"), std::string::npos);
}

}  // namespace
