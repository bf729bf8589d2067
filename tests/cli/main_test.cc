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
