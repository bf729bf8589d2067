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

}  // namespace
}  // namespace gpupack
