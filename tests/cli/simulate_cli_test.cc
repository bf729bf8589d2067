// End-to-end: the gpupack binary's simulate command.
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
  std::string output;  // stdout and stderr
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
  const auto dir = std::filesystem::temp_directory_path() / ("gpupack_cli_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimulateCli, SyntheticDefaultComparesEveryPolicyAndWritesTheReport) {
  const std::string out = temp_dir("synthetic");
  const RunResult r = run("simulate --synthetic-nodes 120 --seeds 1-2 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* p : {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "firstfit", "spread"})
    EXPECT_THAT(r.output, ::testing::HasSubstr(p));
  EXPECT_THAT(r.output, ::testing::HasSubstr("@130%"));
  const std::string curves = read(out + "/curves.csv");
  EXPECT_EQ(curves.substr(0, curves.find('\n')), "policy,seed,arrived_pct,alloc_pct,frag_pct");
  EXPECT_THAT(curves, ::testing::HasSubstr("\nfgd,2,100,"));
  const auto summary = nlohmann::json::parse(read(out + "/summary.json"));
  ASSERT_EQ(summary["runs"].size(), 16u);
  for (const auto& run : summary["runs"]) {
    EXPECT_TRUE(run.contains("final_alloc_pct"));
    EXPECT_TRUE(run.contains("failed_pods"));
    EXPECT_TRUE(run.contains("wall_seconds"));
  }
  const std::string svg = read(out + "/allocation.svg");
  EXPECT_THAT(svg, ::testing::StartsWith("<svg"));
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 10, true);
  EXPECT_THAT(svg, ::testing::HasSubstr("polyline"));
}

TEST(SimulateCli, ReplaysAnOrderWithNodeRanksAndWritesPlacements) {
  const std::string dir = temp_dir("replay");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\nn2,8000,1000,1,T4\n";
  std::ofstream(dir + "/pods.csv") << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,600\np2,1000,10,1,600\n";
  std::ofstream(dir + "/order.csv") << "idx,pod\n0,p2\n1,p1\n2,p1\n";
  std::ofstream(dir + "/rank.csv") << "node,rank\nn1,1\nn2,0\n";
  const RunResult r = run("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/pods.csv --policy firstfit --order " +
                          dir + "/order.csv --node-rank " + dir + "/rank.csv --out " + dir + "/out --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read(dir + "/out/placements.csv"),
            "policy,idx,pod,node,gpus\nfirstfit,0,p2,n2,0\nfirstfit,1,p1,n1,0\nfirstfit,2,p1,,\n");
}

TEST(SimulateCli, BadInputIsReportedWithWhereAndWhat) {
  const std::string dir = temp_dir("bad");
  std::ofstream(dir + "/nodes.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1000,1,T4\nn2,80x0,1000,1,T4\n";
  std::ofstream(dir + "/pods.csv") << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,600\n";
  RunResult r = run("simulate --nodes " + dir + "/nodes.csv --pods " + dir + "/pods.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("nodes.csv:3: column 'cpu_milli': not an integer (value '80x0')"));
  r = run("simulate --policy tetris --synthetic-nodes 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("unknown policy 'tetris'"));
  r = run("simulate --seeds 5-x --synthetic-nodes 10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--seeds"));
  r = run("simulate --nodes " + dir + "/nodes.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::HasSubstr("--nodes and --pods go together"));
}

}  // namespace
