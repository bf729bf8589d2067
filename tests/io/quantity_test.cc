#include "io/quantity.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpupack {
namespace {

TEST(Quantity, CpuForms) {
  EXPECT_EQ(parse_cpu_milli("500m"), 500);
  EXPECT_EQ(parse_cpu_milli("2"), 2000);
  EXPECT_EQ(parse_cpu_milli("191500m"), 191500);
  EXPECT_EQ(parse_cpu_milli("0.5"), 500);
  EXPECT_EQ(parse_cpu_milli(".25"), 250);
  EXPECT_EQ(parse_cpu_milli("1."), 1000);
  EXPECT_EQ(parse_cpu_milli("+3"), 3000);
  EXPECT_EQ(parse_cpu_milli("0"), 0);
  // Sub-milli values round up, as Kubernetes' MilliValue() does.
  EXPECT_EQ(parse_cpu_milli("1500u"), 2);
  EXPECT_EQ(parse_cpu_milli("1n"), 1);
  EXPECT_EQ(parse_cpu_milli("0.0001"), 1);
}

TEST(Quantity, MemoryForms) {
  EXPECT_EQ(parse_memory_mib("16Gi", Round::kUp), 16 * 1024);
  EXPECT_EQ(parse_memory_mib("512Mi", Round::kUp), 512);
  EXPECT_EQ(parse_memory_mib("250Gi", Round::kUp), 250 * 1024);
  EXPECT_EQ(parse_memory_mib("1.5Gi", Round::kUp), 1536);
  EXPECT_EQ(parse_memory_mib("16367668Ki", Round::kDown), 16367668 / 1024);
  EXPECT_EQ(parse_memory_mib("16367668Ki", Round::kUp), 16367668 / 1024 + 1);
  // 1G = 10^9 bytes = 953.67 MiB.
  EXPECT_EQ(parse_memory_mib("1G", Round::kUp), 954);
  EXPECT_EQ(parse_memory_mib("1G", Round::kDown), 953);
  EXPECT_EQ(parse_memory_mib("1e9", Round::kDown), 953);
  EXPECT_EQ(parse_memory_mib("1E9", Round::kDown), 953);
  EXPECT_EQ(parse_memory_mib("2097152000Ki", Round::kDown), 2048000);
  EXPECT_EQ(parse_memory_mib("1Ti", Round::kUp), 1024 * 1024);
  EXPECT_EQ(parse_memory_mib("1Ei", Round::kUp), int64_t{1} << 40);
}

TEST(Quantity, CountsAndExponents) {
  EXPECT_EQ(quantity_value(parse_quantity("2k")), 2000);
  EXPECT_EQ(quantity_value(parse_quantity("110")), 110);
  EXPECT_EQ(quantity_value(parse_quantity("1E")), 1000000000000000000);
  EXPECT_EQ(quantity_value(parse_quantity("12e-1")), 2);  // 1.2 rounds up
  EXPECT_EQ(quantity_value(parse_quantity("-1.5")), -1);  // towards +inf
  EXPECT_TRUE(quantity_is_integer(parse_quantity("2k")));
  EXPECT_TRUE(quantity_is_integer(parse_quantity("1000m")));
  EXPECT_FALSE(quantity_is_integer(parse_quantity("1500m")));
  EXPECT_EQ(quantity_value(parse_quantity("000000000000000000000000000000000000000000000007")), 7);
}

TEST(Quantity, RejectsMalformedTextNamingIt) {
  for (const char* bad : {"", "abc", "1.2.3", "5Qi", "1ki", "1 Gi", " 1", "1Gi ", "--1", "e3", "1e", "1e+", "1GiB",
                          "0x10", ".", "+", "1mm", "1e999"}) {
    try {
      parse_quantity(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos) << e.what();
    }
  }
}

TEST(Quantity, OutOfRangeIsAnErrorNotAWrap) {
  EXPECT_THROW(quantity_value(parse_quantity("9Ei")), std::out_of_range);
  EXPECT_THROW(quantity_milli(parse_quantity("9223372036854775807")), std::out_of_range);
  EXPECT_THROW(quantity_value(parse_quantity("1e60")), std::out_of_range);
  EXPECT_EQ(quantity_value(parse_quantity("9223372036854775807")), INT64_MAX);
  EXPECT_EQ(quantity_value(parse_quantity("1e-60")), 1);
  EXPECT_EQ(quantity_mib(parse_quantity("1e-60"), Round::kDown), 0);
}

}  // namespace
}  // namespace gpupack
