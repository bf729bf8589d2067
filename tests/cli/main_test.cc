// The command line as a whole: a mistyped command names the nearest one,
// usage errors exit 2, --help and --version succeed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/cli_runner.h"
#include "util/strings.h"

#include <regex>
#include <set>
#include <string>
#include <vector>

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

// Every flag of every command (and nested command) says what it does, and
// the output flags are spelled one way: -o/--out.
TEST(CliMain, EveryFlagHasHelpAndOutputsAreSpelledOut) {
  std::vector<std::string> commands = {""};
  std::set<std::string> seen;
  int flags = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const std::string cmd = commands[i];
    testing::RunResult r = run_gpupack(cmd + (cmd.empty() ? "" : " ") + "--help");
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    std::vector<std::string> lines = split(r.output, '\n');
    std::string section;
    for (size_t k = 0; k < lines.size(); ++k) {
      const std::string& line = lines[k];
      if (!line.empty() && line.back() == ':' && line[0] != ' ') {
        section = line;
        continue;
      }
      if (line.size() < 3 || line[0] != ' ' || line[1] != ' ') continue;
      const std::string body = line.substr(2);
      if (section == "Subcommands:") {
        const std::string name = body.substr(0, body.find(' '));
        if (!name.empty() && seen.insert(cmd + " " + name).second)
          commands.push_back(cmd.empty() ? name : cmd + " " + name);
        continue;
      }
      if (section != "Options:" || body[0] != '-') continue;
      ++flags;
      // "-o,--out TEXT [default]   description": after the names come the
      // signature tokens (TYPE, TYPE=default, TYPE:range, [default], ...,
      // REQUIRED), then the description, or it is on the next, indented line.
      std::vector<std::string> tokens;
      for (const std::string& word : split(body, ' '))
        if (!word.empty()) tokens.push_back(word);
      const std::regex signature(R"re([A-Z]{2,}[A-Z0-9_]*([:=].*)?|\.\.\.)re");
      size_t t = 1;
      while (t < tokens.size()) {
        if (tokens[t][0] == '[') {
          while (t < tokens.size() && tokens[t].back() != ']') ++t;
          ++t;
        } else if (std::regex_match(tokens[t], signature)) {
          ++t;
        } else {
          break;
        }
      }
      const bool same_line = t < tokens.size();
      const bool next_line = k + 1 < lines.size() && lines[k + 1].rfind("      ", 0) == 0 &&
                             lines[k + 1].find_first_not_of(' ') != std::string::npos &&
                             lines[k + 1][lines[k + 1].find_first_not_of(' ')] != '-';
      EXPECT_TRUE(same_line || next_line) << "gpupack " << cmd << ": no help for " << body;
      EXPECT_EQ(body.find("--output "), std::string::npos) << "gpupack " << cmd << ": " << body;
      EXPECT_EQ(body.find("--config-out"), std::string::npos) << "gpupack " << cmd << ": " << body;
      if (body.rfind("--out ", 0) == 0) ADD_FAILURE() << "gpupack " << cmd << ": --out without -o";
    }
  }
  EXPECT_GT(commands.size(), 12u);
  EXPECT_GT(flags, 150);
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
