#include "util/strings.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

TEST(Strings, CaseInsensitiveEqualityAndSplitKeepsEmptyFields) {
  EXPECT_TRUE(iequals("A100-80gb", "a100-80GB"));
  EXPECT_FALSE(iequals("A100", "A1000"));
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split("fgd", ','), (std::vector<std::string>{"fgd"}));
}

TEST(Strings, TrimDropsAsciiWhiteSpaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(trim("\f\vtoken\v"), "token");
  EXPECT_EQ(trim("x"), "x");
  EXPECT_EQ(trim(" \t\r\n "), "");
  EXPECT_EQ(trim(""), "");
  const std::string_view text = " abc ";
  EXPECT_EQ(trim(text).data(), text.data() + 1);  // a view into the argument, no copy
  EXPECT_EQ(trim(" 5\v\r\n", " \t\r\n"), "5\v");  // only the characters given
  EXPECT_EQ(trim("--x--", "-"), "x");
}

TEST(Excerpt, ShortTextComesBackWhole) {
  EXPECT_EQ(excerpt("A100-80GB"), "A100-80GB");
  EXPECT_EQ(excerpt(""), "");
  EXPECT_EQ(excerpt(std::string(80, 'a')), std::string(80, 'a'));  // exactly fits
}

TEST(Excerpt, LongTextIsCutToTheLimitWithAnEllipsis) {
  const std::string big(1 << 20, 'z');
  const std::string e = excerpt(big);
  EXPECT_EQ(e.size(), 80u);
  EXPECT_EQ(e, std::string(77, 'z') + "...");
  EXPECT_EQ(excerpt(std::string(81, 'a')), std::string(77, 'a') + "...");
  EXPECT_EQ(excerpt(big, 20).size(), 20u);
  EXPECT_EQ(excerpt(big, 0).size(), 8u);  // the smallest excerpt
}

TEST(Excerpt, EscapesControlBytesAndBackslashWithinTheLimit) {
  EXPECT_EQ(excerpt(std::string("a\nb\tc\r\x01\x7f\\d", 10)), "a\\nb\\tc\\r\\x01\\x7f\\\\d");
  EXPECT_EQ(excerpt(std::string("x\0y", 3)), "x\\x00y");
  // Escapes count against the limit: never more than max bytes out.
  const std::string e = excerpt(std::string(1000, '\n'), 30);
  EXPECT_LE(e.size(), 30u);
  EXPECT_EQ(e.substr(e.size() - 3), "...");
  EXPECT_EQ(e.find("\\n..."), e.size() - 5);  // no half escape before the ellipsis
}

TEST(Excerpt, NeverCutsInsideAUtf8Character) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "\u00e9";  // 2-byte character
  for (size_t max = 8; max < 30; ++max) {
    const std::string e = excerpt(text, max);
    ASSERT_LE(e.size(), max);
    const std::string body = e.substr(0, e.size() - 3);
    EXPECT_EQ(body.size() % 2, 0u) << max;  // whole characters only
  }
}

TEST(Excerpt, AroundAnOffsetStartsNearIt) {
  std::string text(10000, '.');
  text.replace(5000, 5, "ERROR");
  const std::string e = excerpt_around(text, 5000, 40);
  EXPECT_LE(e.size(), 40u);
  EXPECT_EQ(e.substr(0, 3), "...");
  EXPECT_NE(e.find("ERROR"), std::string::npos) << e;
  EXPECT_EQ(excerpt_around("short", 2), "short");
  EXPECT_EQ(excerpt_around("short", 99), "short");  // offset past the end
}

TEST(Excerpt, ErrorTextDropsTheLastReadTokenAndBoundsTheRest) {
  const std::string token(1 << 20, 'q');
  const std::string what =
      "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error while "
      "parsing value - invalid literal; last read: '" +
      token + "'";
  const std::string e = error_text(what);
  EXPECT_EQ(e,
            "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error while parsing "
            "value - invalid literal");
  EXPECT_LE(error_text(token).size(), 200u);
}

}  // namespace
}  // namespace gpupack
