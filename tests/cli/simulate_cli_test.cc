// End-to-end: the gpupack binary's simulate command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/cli_runner.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "policy/registry.h"

namespace {

using gpupack::policy_names;
using gpupack::testing::fresh_temp_dir;
using gpupack::testing::read_file;
using gpupack::testing::run_gpupack;
using gpupack::testing::RunResult;

TEST(SimulateCli, SyntheticDefaultComparesEveryPolicyAndWritesTheReport) {
  const std::string out = fresh_temp_dir("cli_synthetic");
  const RunResult r = run_gpupack("simulate --synthetic-nodes 120 --seeds 1-2 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& p : policy_names()) EXPECT_THAT(r.output, ::testing::HasSubstr(p));
  EXPECT_THAT(r.output, ::testing::HasSubstr("@130%"));
  const std::string curves = read_file(out + "/curves.csv");
  EXPECT_EQ(curves.substr(0, curves.find('\n')), "policy,seed,arrived_pct,alloc_pct,frag_pct");
  EXPECT_THAT(curves, ::testing::HasSubstr("\nfgd,2,100,"));
  const auto summary = nlohmann::json::parse(read_file(out + "/summary.json"));
  ASSERT_EQ(summary["runs"].size(), policy_names().size() * 2);  // every policy, 2 seeds
  for (const auto& run : summary["runs"]) {
    EXPECT_TRUE(run.contains("final_alloc_pct"));
    EXPECT_TRUE(run.contains("failed_pods"));
    EXPECT_TRUE(run.contains("wall_seconds"));
  }
  const std::string svg = read_file(out + "/allocation.svg");
  EXPECT_THAT(svg, ::testing::StartsWith("<svg"));
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 10, true);
  EXPECT_THAT(svg, ::testing::HasSubstr("polyline"));
}

TEST(SimulateCli, ReplaysAnOrderWithNodeRanksAndWritesPlacements) {
  const std::string dir = fresh_temp_dir("cli_replay");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\nn2,8000,1000,1,T4\n";
  std::ofstream(dir + "/pods.csv")
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,600\np2,1000,10,1,600\n";
  std::ofstream(dir + "/order.csv") << "idx,pod\n0,p2\n1,p1\n2,p1\n";
  std::ofstream(dir + "/rank.csv") << "node,rank\nn1,1\nn2,0\n";
  const RunResult r =
      run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/pods.csv --policy firstfit --order " +
                  dir + "/order.csv --node-rank " + dir + "/rank.csv --out " + dir + "/out --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(dir + "/out/placements.csv"),
            "policy,idx,pod,node,gpus\nfirstfit,0,p2,n2,0\nfirstfit,1,p1,n1,0\nfirstfit,2,p1,,\n");
}

TEST(SimulateCli, StatesThePackingBoundOfTheMixAndWhatThePlacedSizesForce) {
  const std::string dir = fresh_temp_dir("cli_bound");
  std::ofstream(dir + "/nodes.csv")
      << "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,100000,2,T4\nn2,64000,100000,2,T4\n";
  // 470s only: GPUs hold two each and keep 60 free, 94% at best.
  std::ofstream pods(dir + "/pods.csv");
  pods << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  for (int i = 0; i < 8; ++i) pods << "p" << i << ",1000,10,1,470\n";
  pods.close();
  const RunResult r = run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir +
                                  "/pods.csv --policy bestfit,spread --seeds 1-2 --out " + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("packing bound of the workload's mix: 94.00% GPU allocation"));
  const auto summary = nlohmann::json::parse(read_file(dir + "/out/summary.json"));
  EXPECT_NEAR(summary["mix_packing_bound_pct"].get<double>(), 94.0, 1e-9);
  ASSERT_EQ(summary["runs"].size(), 4u);
  for (const auto& run : summary["runs"]) {
    // Whatever a run placed, its 470s force 30 free milli each: 1000 x n / 2 - 470 x n.
    const double alloc_milli = run["final_alloc_pct"].get<double>() * 4000 / 100;
    const double placed = std::round(alloc_milli / 470);
    EXPECT_NEAR(run["size_waste_pct"].get<double>(), 100.0 * 30 * placed / 4000, 1e-6) << run;
  }
  for (const char* p : {"bestfit", "spread"})
    EXPECT_TRUE(summary["policies"][p]["mean_size_waste_pct"].is_number()) << p;
  EXPECT_THAT(read_file(dir + "/out/report.html"), ::testing::HasSubstr("packing bound of the workload's mix"));
}

TEST(SimulateCli, BadInputIsReportedWithWhereAndWhat) {
  const std::string dir = fresh_temp_dir("cli_bad");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\nn2,80x0,1000,1,T4\n";
  std::ofstream(dir + "/pods.csv") << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,600\n";
  RunResult r = run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/pods.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("nodes.csv:3: column 'cpu_milli': not an integer (value '80x0')"));
  r = run_gpupack("simulate --policy tetris --synthetic-nodes 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("unknown policy 'tetris'"));
  r = run_gpupack("simulate --seeds 5-x --synthetic-nodes 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--seeds"));
  r = run_gpupack("simulate --nodes " + dir + "/nodes.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--nodes and --pods go together"));
}

// Inputs that would give a table of nan, a duplicated pod and an output
// folder that cannot be written are errors before any run.
TEST(SimulateCli, EmptyOrGpuLessWorkloadsDuplicatePodsAndUnwritableOutAreErrors) {
  const std::string dir = fresh_temp_dir("cli_papercuts");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,2,T4\n";
  std::ofstream(dir + "/header.csv") << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  std::ofstream(dir + "/cpu.csv") << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,0,0\n";
  std::ofstream(dir + "/dup.csv")
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,500\np1,1000,10,1,500\n";
  RunResult r = run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/header.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("header.csv: no pods"));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("nan")));
  r = run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/cpu.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("cpu.csv: no pod asks for a GPU"));
  r = run_gpupack("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/dup.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("dup.csv:3: column 'name': pod name given twice (first on line 2)"));
  r = run_gpupack("simulate --synthetic-nodes 10 --out /proc/gpupack-nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--out /proc/gpupack-nope: cannot write there"));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("policy ")));  // no table: nothing ran
}

// Not on a terminal (a log, CI), progress comes as whole lines, ending with
// the line that says every run is done; --quiet leaves it out.
TEST(SimulateCli, ProgressIsWholeLinesWhenStderrIsNotATerminal) {
  RunResult r = run_gpupack("simulate --synthetic-nodes 12 --policy bestfit,fgd --seeds 42");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("simulate: 2/2 runs done, 100.0% of arrivals scheduled\n"));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("\r")));
  r = run_gpupack("simulate --synthetic-nodes 12 --policy bestfit --seeds 42 --quiet");
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("runs done")));
}

}  // namespace
