#include "util/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace gpupack {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(Log, LinesCarryTimestampLevelAndQuotedFields) {
  const std::string line = format_log_line(
      LogLevel::kInfo, "serving", {{"addr", "127.0.0.1:8888"}, {"policy", "fgd"}, {"why", "a \"quoted\" value"}});
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=info .*)"))) << line;
  EXPECT_THAT(line, ::testing::HasSubstr("msg=serving addr=127.0.0.1:8888 policy=fgd why=\"a \\\"quoted\\\" value\""));
  EXPECT_THAT(format_log_line(LogLevel::kWarn, "two\nlines", {}), ::testing::HasSubstr("msg=\"two\\nlines\""));
}

TEST(Log, LevelsFilterAndUnknownNamesAreRefused) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  set_log_sink(f);
  set_log_level("warn");
  log_info("hidden");
  log_debug("hidden too");
  log_warn("shown");
  log_error("also shown");
  EXPECT_FALSE(log_enabled(LogLevel::kInfo));
  EXPECT_THROW(set_log_level("verbose"), std::invalid_argument);
  EXPECT_EQ(log_level(), LogLevel::kWarn);  // unchanged by the bad name
  set_log_level("info");
  set_log_sink(nullptr);
  const std::string out = read_all(f);
  std::fclose(f);
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("hidden")));
  EXPECT_THAT(out, ::testing::HasSubstr("level=warn msg=shown"));
  EXPECT_THAT(out, ::testing::HasSubstr("level=error msg=\"also shown\""));
}

TEST(Log, LinesFromManyThreadsNeverInterleave) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  set_log_sink(f);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) log_info("decision", {{"thread", std::to_string(t)}, {"i", std::to_string(i)}});
    });
  for (auto& th : threads) th.join();
  set_log_sink(nullptr);
  const std::string out = read_all(f);
  std::fclose(f);
  int lines = 0;
  size_t start = 0;
  const std::regex whole(R"(ts=\S+ level=info msg=decision thread=\d i=\d+)");
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_TRUE(std::regex_match(out.substr(start, end - start), whole)) << out.substr(start, end - start);
    ++lines;
    start = end + 1;
  }
  EXPECT_EQ(lines, 800);
}

}  // namespace
}  // namespace gpupack
