// End-to-end: simulate --defrag-budget / --save-state and gpupack defrag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "defrag/snapshot.h"

namespace {

using ::testing::HasSubstr;

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
  const auto dir = std::filesystem::temp_directory_path() / ("gpupack_defrag_cli_" + name);
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

TEST(DefragCli, SimulateWithDefragBudgetReportsBeforeAndAfterPerRun) {
  const std::string out = temp_dir("simulate");
  const RunResult r = run("simulate --synthetic-nodes 120 --policy fgd,bestfit --seeds 1-2 --defrag-budget 5% "
                          "--save-state " + out + "/state.json --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alloc %"));
  const auto j = nlohmann::json::parse(read(out + "/summary.json"));
  ASSERT_EQ(j["runs"].size(), 4u);
  for (const auto& run : j["runs"]) {
    const double before = run["alloc_pct_before_defrag"], after = run["alloc_pct_after_defrag"];
    EXPECT_NEAR(before, run["final_alloc_pct"].get<double>(), 1e-9);
    EXPECT_GE(after, before);
    EXPECT_LE(run["moves"].get<int>(), run["running_pods"].get<int>() * 5 / 100);
    EXPECT_GT(run["running_pods"].get<int>(), 0);
  }
  EXPECT_TRUE(j["policies"]["fgd"].contains("mean_alloc_pct_after_defrag"));
  // The saved state is the first run's state after its arrivals.
  const gpupack::Snapshot snap = gpupack::read_snapshot(out + "/state.json");
  EXPECT_EQ(snap.state.bound_pod_count(), j["runs"][0]["running_pods"].get<int>());
  EXPECT_EQ(static_cast<int>(snap.pending.size()), j["runs"][0]["failed_pods"].get<int>());

  const RunResult table = run("defrag --state " + out + "/state.json --max-moves-pct 5");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("greedy plan, goal admit"));
  const RunResult ev = run("defrag --state " + out + "/state.json --max-moves 10 --format evictions");
  ASSERT_EQ(ev.exit_code, 0) << ev.output;
  const auto list = nlohmann::json::parse(ev.output);
  EXPECT_EQ(list["kind"], "List");
  EXPECT_LE(list["items"].size(), 10u);
  const RunResult js = run("defrag --state " + out + "/state.json --goal free-gpus --max-moves 5 --format json");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const auto plan = nlohmann::json::parse(js.output);
  EXPECT_LE(plan["moves"].get<int>(), 5);
  EXPECT_GE(plan["after"]["free_gpus"].get<int>(), plan["before"]["free_gpus"].get<int>());
}

TEST(DefragCli, WithoutDefragBudgetTheSummaryHasNoDefragFields) {
  const std::string out = temp_dir("plain");
  const RunResult r = run("simulate --synthetic-nodes 60 --policy fgd --seeds 1 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("alloc %")));
  const auto j = nlohmann::json::parse(read(out + "/summary.json"));
  EXPECT_FALSE(j["runs"][0].contains("alloc_pct_before_defrag"));
  EXPECT_FALSE(j["policies"]["fgd"].contains("mean_moves"));
}

TEST(DefragCli, BadInputFailsWithAClearMessage) {
  const std::string dir = temp_dir("bad");
  {
    std::ofstream f(dir + "/bad.json");
    f << R"({"format":"gpupack-state/v1","nodes":[{"name":"a","cpu_milli":-5,"memory_mib":1,"gpus":0}],"pods":[]})";
  }
  RunResult r = run("defrag --state " + dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("gpupack: error:"));
  EXPECT_THAT(r.output, HasSubstr("nodes[0].cpu_milli"));
  r = run("defrag --state " + dir + "/missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.json"));
  r = run("simulate --synthetic-nodes 50 --defrag-budget 7x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--defrag-budget: '7x'"));
  r = run("simulate --synthetic-nodes 50 --defrag-budget 5% --defrag-method magic");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("unknown defrag method 'magic'"));
}

}  // namespace
