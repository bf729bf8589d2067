// End-to-end: simulate --defrag-budget / --save-state and gpupack defrag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/cli_runner.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "defrag/snapshot.h"

namespace {

using gpupack::testing::fresh_temp_dir;
using gpupack::testing::read_file;
using gpupack::testing::run_gpupack;
using gpupack::testing::RunResult;

using ::testing::HasSubstr;

TEST(DefragCli, SimulateWithDefragBudgetReportsBeforeAndAfterPerRun) {
  const std::string out = fresh_temp_dir("defrag_cli_simulate");
  const RunResult r = run_gpupack(
      "simulate --synthetic-nodes 120 --policy fgd,bestfit --seeds 1-2 --defrag-budget 5% "
      "--save-state " +
      out + "/state.json --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alloc %"));
  const auto j = nlohmann::json::parse(read_file(out + "/summary.json"));
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

  const RunResult table = run_gpupack("defrag --state " + out + "/state.json --max-moves-pct 5");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  // The planner's pipeline (greedy, consolidation, swaps, chains) named in the order it ran.
  EXPECT_THAT(table.output, ::testing::ContainsRegex("(consolidation|greedy|swaps|chains)( \\+ "
                                                     "(consolidation|greedy|refinement|swaps|chains))* plan, goal "
                                                     "admit: [0-9]+ moves"));
  // The value rule: at most 2 moves per GPU admitted, said in the algorithm when it cut the plan.
  const RunResult valued =
      run_gpupack("defrag --state " + out + "/state.json --max-moves-pct 5 --max-moves-per-gpu 2 --format json");
  ASSERT_EQ(valued.exit_code, 0) << valued.output;
  const auto vj = nlohmann::json::parse(valued.output);
  if (!vj["moves_per_gpu_admitted"].is_null()) {
    EXPECT_LE(vj["moves_per_gpu_admitted"].get<double>(), 2.0 + 1e-9);
  } else {
    EXPECT_TRUE(vj["moves"].get<int>() == 0 || vj["after"]["admitted_gpu_milli"].get<int64_t>() > 0) << vj.dump();
  }
  const RunResult ev = run_gpupack("defrag --state " + out + "/state.json --max-moves 10 --format evictions");
  ASSERT_EQ(ev.exit_code, 0) << ev.output;
  const auto list = nlohmann::json::parse(ev.output);
  EXPECT_EQ(list["kind"], "List");
  EXPECT_LE(list["items"].size(), 10u);
  const RunResult js =
      run_gpupack("defrag --state " + out + "/state.json --goal free-gpus --max-moves 5 --format json");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const auto plan = nlohmann::json::parse(js.output);
  EXPECT_LE(plan["moves"].get<int>(), 5);
  EXPECT_GE(plan["after"]["free_gpus"].get<int>(), plan["before"]["free_gpus"].get<int>());
}

TEST(DefragCli, WithoutDefragBudgetTheSummaryHasNoDefragFields) {
  const std::string out = fresh_temp_dir("defrag_cli_plain");
  const RunResult r = run_gpupack("simulate --synthetic-nodes 60 --policy fgd --seeds 1 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("alloc %")));
  const auto j = nlohmann::json::parse(read_file(out + "/summary.json"));
  EXPECT_FALSE(j["runs"][0].contains("alloc_pct_before_defrag"));
  EXPECT_FALSE(j["policies"]["fgd"].contains("mean_moves"));
}

TEST(DefragCli, BadInputFailsWithAClearMessage) {
  const std::string dir = fresh_temp_dir("defrag_cli_bad");
  {
    std::ofstream f(dir + "/bad.json");
    f << R"({"format":"gpupack-state/v1","nodes":[{"name":"a","cpu_milli":-5,"memory_mib":1,"gpus":0}],"pods":[]})";
  }
  RunResult r = run_gpupack("defrag --state " + dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("gpupack: error:"));
  EXPECT_THAT(r.output, HasSubstr("nodes[0].cpu_milli"));
  r = run_gpupack("defrag --state " + dir + "/bad.json --goal frag");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--goal frag needs --frag-below"));
  r = run_gpupack("defrag --state " + dir + "/bad.json --goal free-gpus --max-moves-per-gpu 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--max-moves-per-gpu needs --goal admit without --gang"));
  r = run_gpupack("defrag --state " + dir + "/bad.json --max-moves-per-gpu -2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("must be -1 (no limit) or at least 0"));
  r = run_gpupack("defrag --state " + dir + "/missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.json"));
  r = run_gpupack("simulate --synthetic-nodes 50 --defrag-budget 7x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--defrag-budget: '7x'"));
  r = run_gpupack("simulate --synthetic-nodes 50 --defrag-budget 5% --defrag-method magic");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("unknown defrag method 'magic'"));
}

}  // namespace

namespace {

TEST(DefragCli, BoundIsPrintedBesideThePlanAndNeverBelowIt) {
  const std::string out = fresh_temp_dir("defrag_cli_bound");
  const RunResult sim = run_gpupack("simulate --synthetic-nodes 40 --policy fgd --seeds 3 --save-state " + out +
                                    "/state.json --out " + out);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const RunResult js = run_gpupack("defrag --state " + out + "/state.json --max-moves-pct 5 --bound --format json");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const auto plan = nlohmann::json::parse(js.output.substr(js.output.find('{')));
  const auto& b = plan["bound"];
  ASSERT_TRUE(b["solved"].get<bool>());
  const double admitted = plan["after"]["admitted_gpu_milli"].get<double>();
  const double lp = b["admitted_gpu_milli"].get<double>();
  const double lagrangian = b["lagrangian"]["admitted_gpu_milli"].get<double>();
  EXPECT_GE(lagrangian + 1e-6, admitted);
  EXPECT_GE(b["lagrangian"]["priced_gpu_milli"].get<double>() + 1e-6, lagrangian);  // the cores only lower it
  EXPECT_GE(lp + 1e-6, admitted);
  EXPECT_NEAR(b["certified_gpu_milli"].get<double>(), lp, 1e-6 * std::max(1.0, lp));
  EXPECT_NEAR(b["bound_gpu_milli"].get<double>(), std::min(lp, lagrangian), 1e-6 * std::max(1.0, lp));
  const RunResult table = run_gpupack("defrag --state " + out + "/state.json --max-moves-pct 5 --bound");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("bound (Lagrangian, whole pods per GPU, each node's cores whole): at most"));
  EXPECT_THAT(table.output, HasSubstr("the smaller of the two; the plan admits"));
  EXPECT_THAT(table.output, HasSubstr("bound without cpu:"));
  const RunResult other = run_gpupack("defrag --state " + out + "/state.json --goal free-gpus --bound");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.output, HasSubstr("--bound needs --goal admit"));
}

// --threads: the same plan on one thread and on two; out of range is refused.
TEST(DefragCli, OneThreadAndTwoThreadsPrintTheSamePlan) {
  const std::string out = fresh_temp_dir("defrag_cli_threads");
  const RunResult sim = run_gpupack("simulate --synthetic-nodes 40 --policy fgd --seeds 3 --tune 1.3 --save-state " +
                                    out + "/state.json --out " + out);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  nlohmann::json plans[2];
  for (int threads = 1; threads <= 2; ++threads) {
    const RunResult r = run_gpupack("defrag --state " + out + "/state.json --max-moves-pct 5 --format json --threads " +
                                    std::to_string(threads));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    plans[threads - 1] = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    EXPECT_GT(plans[threads - 1]["plan_seconds"].get<double>(), 0.0);
    plans[threads - 1].erase("plan_seconds");
  }
  EXPECT_EQ(plans[0], plans[1]);
  EXPECT_FALSE(plans[0]["steps"].empty());  // a plan with moves, not two empty ones
  const RunResult bad = run_gpupack("defrag --state " + out + "/state.json --threads 3");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("--threads"));
}

}  // namespace
