// The command line as a whole: a mistyped command names the nearest one,
// usage errors exit 2, --help and --version succeed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/cli_runner.h"
#include "util/strings.h"

namespace gpupack {
namespace {

using ::testing::HasSubstr;
using testing::run_gpupack;

TEST(CliMain, AMistypedCommandNamesTheNearestOneAndExits2) {
  testing::RunResult r = run_gpupack("simulat --policy fgd");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown command 'simulat', did you mean 'simulate'?"));
  EXPECT_THAT(r.output, HasSubstr("Commands: "));
  r = run_gpupack("anlayze");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("did you mean 'analyze'?"));
  r = run_gpupack("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown command 'frobnicate'\n"));
}

TEST(CliMain, UsageErrorsExit2AndHelpAndVersionSucceed) {
  testing::RunResult r = run_gpupack("simulate --mode sideways");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_gpupack("simulate --no-such-flag");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_gpupack("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_gpupack("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("gpupack "));
  r = run_gpupack("serve --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--scheduler-name"));
}

// Out-of-range numbers are usage errors, before any work is done.
TEST(CliMain, NumericFlagsAreRangeChecked) {
  for (const char* args :
       {"simulate --synthetic-nodes 10 --threads -3", "defrag --state x.json --max-moves -5",
        "defrag --state x.json --max-cost -2", "defrag --state x.json --time-limit -1",
        "defrag --state x.json --frag-below 150", "allocsim --generate steady --seed -5", "serve --threads 0"}) {
    testing::RunResult r = run_gpupack(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

// The synthetic cluster is named once, with its counts.
TEST(CliMain, SyntheticRunsAreTitledOnce) {
  testing::RunResult r = run_gpupack("simulate --synthetic-nodes 12 --policy bestfit --seeds 42");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cluster: synthetic (12 nodes, "));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("synthetic (12 nodes) (")));
}

TEST(CliMain, NearestNameAllowsAFewEditsAndNoMore) {
  const std::vector<std::string> names = {"simulate", "serve", "analyze", "defrag"};
  EXPECT_EQ(nearest_name("simulat", names), "simulate");
  EXPECT_EQ(nearest_name("sevre", names), "serve");  // swapped neighbours count once
  EXPECT_EQ(nearest_name("defarg", names), "defrag");
  EXPECT_EQ(nearest_name("xyz", names), "");
  EXPECT_EQ(nearest_name("", names), "");
}

}  // namespace
}  // namespace gpupack
