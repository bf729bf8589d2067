#include "util/nesting.h"

#include <gtest/gtest.h>

#include <string>

#include "util/input_error.h"

namespace gpupack {
namespace {

std::string nested_json(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonDepth, AcceptsTheLimitAndRefusesOneLevelMore) {
  EXPECT_FALSE(find_json_depth_over(nested_json(kMaxInputDepth)));
  const auto e = find_json_depth_over(nested_json(kMaxInputDepth + 1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->byte, static_cast<size_t>(kMaxInputDepth));
  EXPECT_EQ(e->line, 1u);
  // Siblings do not add up: depth is the longest open chain.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "{\"a\":[1,{\"b\":2}]},";
  EXPECT_FALSE(find_json_depth_over("[" + wide + "0]", 4));
  EXPECT_TRUE(find_json_depth_over("[" + wide + "0]", 2));
}

TEST(JsonDepth, IgnoresBracketsInsideStringsAndEscapedQuotes) {
  const std::string brackets(1000, '[');
  EXPECT_FALSE(find_json_depth_over("{\"k\": \"" + brackets + "\"}", 2));
  EXPECT_FALSE(find_json_depth_over("{\"k\": \"a\\\"" + brackets + "\\\\\"}", 2));
  // After an escaped backslash the quote closes the string: the brackets count.
  EXPECT_TRUE(find_json_depth_over("[\"a\\\\\", [[[1]]]]", 3));
}

TEST(JsonDepth, ReportsTheLineOfTheExcess) {
  const auto e = find_json_depth_over("{\n\"a\":\n[[[", 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 3u);
  EXPECT_EQ(e->byte, 9u);
  try {
    check_json_depth("{\n\"a\":\n[[[", "deep.json", 3);
    FAIL() << "no error";
  } catch (const InputError& err) {
    EXPECT_STREQ(err.what(), "deep.json:3: JSON nested more than 3 levels deep (at byte 9); refused before parsing");
  }
}

TEST(YamlDepth, CountsFlowCollectionsAndOneLineBlockIndicators) {
  EXPECT_FALSE(find_yaml_depth_over("a: " + nested_json(kMaxInputDepth) + "\n"));
  EXPECT_TRUE(find_yaml_depth_over("a: " + nested_json(kMaxInputDepth + 1) + "\n"));
  std::string flow_maps = "a: ";
  for (int i = 0; i < 200; ++i) flow_maps += "{b: ";
  EXPECT_TRUE(find_yaml_depth_over(flow_maps));
  std::string dashes = "a:\n  ";
  for (int i = 0; i < 200; ++i) dashes += "- ";
  EXPECT_TRUE(find_yaml_depth_over(dashes + "x\n"));
  EXPECT_FALSE(find_yaml_depth_over("a:\n  - - - x\n  - y\n", 3));
  EXPECT_TRUE(find_yaml_depth_over("a:\n  - - - - x\n", 3));
  // A tag or anchor before the collection does not hide it.
  EXPECT_TRUE(find_yaml_depth_over("a: &x !!seq [[[[1]]]]\n", 3));
}

TEST(YamlDepth, BracketsInScalarsCommentsAndBlockScalarsDoNotCount) {
  const std::string many(500, '[');
  EXPECT_FALSE(find_yaml_depth_over("name: gpu" + many + "\n", 2));                      // plain scalar
  EXPECT_FALSE(find_yaml_depth_over("name: \"a: " + many + "\"\n", 2));                  // double-quoted
  EXPECT_FALSE(find_yaml_depth_over("name: 'it''s " + many + "'\n", 2));                 // single-quoted
  EXPECT_FALSE(find_yaml_depth_over("# - " + many + "\nname: x # [" + many + "\n", 2));  // comments
  EXPECT_FALSE(find_yaml_depth_over("script: |\n  " + many + "\n\n  " + many + "\nnext: [1]\n", 2));
  EXPECT_FALSE(find_yaml_depth_over("- a: >-\n    " + many + "\n- b\n", 2));
  // Lines after the block scalar count again.
  EXPECT_TRUE(find_yaml_depth_over("script: |\n  x\nnext: [[[1]]]\n", 2));
  // Inside a flow collection a quoted string hides its brackets.
  EXPECT_FALSE(find_yaml_depth_over("a: [\"" + many + "\", '" + many + "']\n", 2));
}

TEST(YamlDepth, CheckNamesSourceLineAndLimit) {
  try {
    check_yaml_depth("a: 1\nb: [[[1]]]\n", "cluster.yaml", 2);
    FAIL() << "no error";
  } catch (const InputError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("cluster.yaml:2: YAML nested more than 2 levels deep"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace gpupack
