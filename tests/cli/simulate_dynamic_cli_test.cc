// End-to-end: `gpupack simulate --mode dynamic` on a generated gang workload
// and on a small openb-format trace with creation/deletion times.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

struct RunResult {
  int exit_code;
  std::string output;
};

RunResult run(const std::string& args) {
  const std::string cmd = std::string(GPUPACK_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpupack_dyn_cli_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(SimulateDynamicCli, GeneratedGangsWithBackfillWriteSeriesSummaryAndChart) {
  const std::string out = temp_dir("gangs");
  const RunResult r =
      run("simulate --mode dynamic --jobs 150 --gang-nodes 16 --backfill --policy fgd --out " + out);
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
  EXPECT_TRUE(std::filesystem::exists(out + "/dynamic.svg"));
}

TEST(SimulateDynamicCli, OpenbTimestampsDriveArrivalsAndDepartures) {
  const std::string dir = temp_dir("openb");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\n";
  // p2 arrives while p1 holds the only GPU and must wait until p1 leaves at t=100.
  std::ofstream(dir + "/pods.csv")
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "p1,1000,10,1,1000,,LS,Running,0,100,0\n"
         "p2,1000,10,1,1000,,LS,Running,10,50,10\n";
  const RunResult r = run("simulate --mode dynamic --nodes " + dir + "/nodes.csv --pods " + dir +
                          "/pods.csv --policy bestfit --out " + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto run0 = read_json(dir + "/out/summary.json")["runs"][0];
  EXPECT_EQ(run0["never_ran"], 0);
  EXPECT_EQ(run0["longest_wait_s"], 90);  // submitted at 10, started at 100
}

TEST(SimulateDynamicCli, BadFlagsAreReported) {
  RunResult r = run("simulate --mode dynamic --quota team-a --jobs 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--quota"));
  r = run("simulate --mode sideways");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
