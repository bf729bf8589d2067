#include "alloc/alloc_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gpupack {
namespace {

TEST(AllocConfig, EmptyStringGivesDefaults) {
  AllocConfig c = parse_alloc_conf("");
  EXPECT_EQ(c.max_split_size_bytes, kUnlimitedBytes);
  EXPECT_EQ(c.max_non_split_rounding_bytes, 20 * kMiB);
  EXPECT_FALSE(c.expandable_segments);
  EXPECT_EQ(c.garbage_collection_threshold, 0.0);
  for (auto d : c.roundup_power2_divisions) EXPECT_EQ(d, 0u);
}

TEST(AllocConfig, ParsesCommonKeysAndIgnoresSpaces) {
  AllocConfig c = parse_alloc_conf(
      " expandable_segments : True , max_split_size_mb:128,"
      "garbage_collection_threshold:0.6,per_process_memory_fraction:0.5");
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_EQ(c.max_split_size_bytes, 128 * kMiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  ASSERT_TRUE(c.per_process_memory_fraction.has_value());
  EXPECT_DOUBLE_EQ(*c.per_process_memory_fraction, 0.5);
}

TEST(AllocConfig, RoundupSingleValueFillsAllIntervals) {
  AllocConfig c = parse_alloc_conf("roundup_power2_divisions:4");
  for (auto d : c.roundup_power2_divisions) EXPECT_EQ(d, 4u);
}

TEST(AllocConfig, RoundupListFirstEntryFillsLowerRangesAndGreaterFillsRest) {
  AllocConfig c = parse_alloc_conf("roundup_power2_divisions:[256:1,512:2,>:8]");
  // 256 MB is interval index 8 (sizes in [256 MiB, 512 MiB)).
  for (int i = 0; i <= 8; ++i) EXPECT_EQ(c.roundup_power2_divisions[i], 1u) << i;
  EXPECT_EQ(c.roundup_power2_divisions[9], 2u);
  for (int i = 10; i < 16; ++i) EXPECT_EQ(c.roundup_power2_divisions[i], 8u) << i;
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_alloc_conf(text);
    FAIL() << "no error for '" << text << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(AllocConfig, RejectsBadKeysAndValuesNamingThem) {
  expect_error("expandable_segment:True", "expandable_segment");
  expect_error("expandable_segment:True", "unknown key");
  expect_error("expandable_segments:true", "True or False");
  expect_error("max_split_size_mb:10", "'10'");
  expect_error("max_split_size_mb:abc", "max_split_size_mb");
  expect_error("garbage_collection_threshold:1.0", "strictly between 0 and 1");
  expect_error("roundup_power2_divisions:3", "power of two");
  expect_error("roundup_power2_divisions:[300:2]", "powers of two");
  expect_error("max_non_split_rounding_mb:4", "must be >= 20");
  expect_error("expandable_segments", "not key:value");
  expect_error("roundup_power2_divisions:[256:2", "brackets");
  expect_error("backend:cudaMallocAsync", "only the native backend");
}

TEST(AllocConfig, ParseBytesUnits) {
  EXPECT_EQ(parse_bytes("81920", "cap"), 81920u);
  EXPECT_EQ(parse_bytes("512MiB", "cap"), 512 * kMiB);
  EXPECT_EQ(parse_bytes("80GiB", "cap"), 80 * kGiB);
  EXPECT_EQ(parse_bytes("2GB", "cap"), 2000000000u);
  EXPECT_THROW(parse_bytes("12XB", "cap"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("", "cap"), std::invalid_argument);
}

}  // namespace
}  // namespace gpupack
