// End-to-end: `gpupack simulate --mode dynamic` on a generated gang workload
// and on a small openb-format trace with creation/deletion times.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/cli_runner.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using gpupack::testing::fresh_temp_dir;
using gpupack::testing::read_file;
using gpupack::testing::run_gpupack;
using gpupack::testing::RunResult;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(SimulateDynamicCli, GeneratedGangsWithBackfillWriteSeriesSummaryAndChart) {
  const std::string out = fresh_temp_dir("dyn_cli_gangs");
  const RunResult r =
      run_gpupack("simulate --mode dynamic --jobs 150 --gang-nodes 16 --backfill --policy fgd --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("fgd+backfill"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("wait p99"));
  const auto summary = read_json(out + "/summary.json");
  ASSERT_EQ(summary["runs"].size(), 1u);
  const auto& run0 = summary["runs"][0];
  EXPECT_EQ(run0["jobs"], 150);
  EXPECT_EQ(run0["never_ran"], 0);
  EXPECT_GT(run0["mean_alloc_pct"].get<double>(), 10.0);
  EXPECT_LE(run0["wait"]["p50_s"].get<double>(), run0["wait"]["p99_s"].get<double>());
  EXPECT_TRUE(run0.contains("wait_by_size"));
  EXPECT_TRUE(run0.contains("gang_wait"));
  std::ifstream series(out + "/series.csv");
  std::string header;
  std::getline(series, header);
  EXPECT_EQ(header, "time_s,run,alloc_pct,frag_pct,queue_length,pending_gpu_milli,running_jobs");
  // The time axis has ticks, from 0 at the first event.
  std::ifstream chart(out + "/dynamic.svg");
  const std::string svg((std::istreambuf_iterator<char>(chart)), std::istreambuf_iterator<char>());
  size_t ticks = 0;
  for (size_t p = svg.find("class=\"tick\""); p != std::string::npos; p = svg.find("class=\"tick\"", p + 1)) ++ticks;
  EXPECT_GE(ticks, 6u) << "three or more per panel";
  EXPECT_NE(svg.find(">0h<"), std::string::npos) << svg.substr(0, 300);
}

TEST(SimulateDynamicCli, EverySeedIsRun) {
  const std::string out = fresh_temp_dir("dyn_cli_seeds");
  const RunResult r =
      run_gpupack("simulate --mode dynamic --jobs 40 --gang-nodes 8 --policy fgd,firstfit --seeds 5-7 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = read_json(out + "/summary.json");
  ASSERT_EQ(summary["runs"].size(), 6u);  // 2 policies x 3 seeds
  for (const char* label : {"fgd seed 5", "fgd seed 6", "fgd seed 7", "firstfit seed 5", "firstfit seed 7"})
    EXPECT_THAT(r.output, ::testing::HasSubstr(label));
}

TEST(SimulateDynamicCli, OpenbTimestampsDriveArrivalsAndDepartures) {
  const std::string dir = fresh_temp_dir("dyn_cli_openb");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\n";
  // p2 arrives while p1 holds the only GPU and must wait until p1 leaves at t=100.
  std::ofstream(dir + "/pods.csv")
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "p1,1000,10,1,1000,,LS,Running,0,100,0\n"
         "p2,1000,10,1,1000,,LS,Running,10,50,10\n";
  const RunResult r = run_gpupack("simulate --mode dynamic --nodes " + dir + "/nodes.csv --pods " + dir +
                                  "/pods.csv --policy bestfit --out " + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto run0 = read_json(dir + "/out/summary.json")["runs"][0];
  EXPECT_EQ(run0["never_ran"], 0);
  EXPECT_EQ(run0["longest_wait_s"], 90);  // submitted at 10, started at 100
}

TEST(SimulateDynamicCli, RoomTriggeredDefragOnFractionalShapesCountsItsMoves) {
  const std::string out = fresh_temp_dir("dyn_cli_room");
  const RunResult r = run_gpupack(
      "simulate --mode dynamic --jobs 300 --gang-nodes 16 --policy fgd --defrag-on-room --defrag-budget 10% "
      "--gang-shapes 1x1@250:.3,1x1@500:.2,1x4:.2,2x8:.2,4x8:.1 --out " +
      out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json run0 = read_json(out + "/summary.json")["runs"][0];
  EXPECT_THAT(run0["run"].get<std::string>(), ::testing::HasSubstr("+room"));
  EXPECT_EQ(run0["never_ran"], 0);
  EXPECT_GE(run0["defrag_runs"].get<int>(), 1);
  EXPECT_GE(run0["defrag_moves"].get<int>(), 1);
}

TEST(SimulateDynamicCli, BadFlagsAreReported) {
  RunResult r = run_gpupack("simulate --mode dynamic --quota team-a --jobs 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--quota"));
  r = run_gpupack("simulate --mode dynamic --jobs 10 --gang-shapes 1x1@250");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--gang-shapes"));
  r = run_gpupack("simulate --mode dynamic --jobs 10 --gang-shapes 1x1:.5x,1x2:.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("'1x1:.5x' has no numeric weight"));
  r = run_gpupack("simulate --mode sideways");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
