// SharedMap: copies share one body; set() writes a private copy.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "util/shared_map.h"

namespace gpupack {
namespace {

using Map = SharedMap<std::string, std::string>;

TEST(SharedMap, CopiesShareOneBodyAndReadLikeTheMap) {
  const Map a(std::map<std::string, std::string>{{"zone", "a"}, {"gpu", "A100"}});
  const Map b = a;
  EXPECT_EQ(&a.get(), &b.get());  // one body, not a copy of the tree
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.at("gpu"), "A100");
  EXPECT_EQ(b.count("zone"), 1u);
  EXPECT_TRUE(b.find("none") == b.end());
  EXPECT_EQ(b.lower_bound("h")->first, "zone");
  std::string keys;
  for (const auto& [k, v] : b) keys += k + ",";
  EXPECT_EQ(keys, "gpu,zone,");
  const std::map<std::string, std::string>& plain = b;  // usable where a std::map is asked for
  EXPECT_EQ(plain.size(), 2u);
}

TEST(SharedMap, SetWritesAPrivateCopy) {
  Map a{{"k", "1"}};
  Map b = a;
  b.set("k", "2");
  b.set("new", "3");
  EXPECT_EQ(a.at("k"), "1");
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.at("k"), "2");
  EXPECT_EQ(b.size(), 2u);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(Map(std::map<std::string, std::string>{{"k", "1"}}) == a);
}

TEST(SharedMap, EmptyHoldsNothing) {
  const Map none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_TRUE(none.begin() == none.end());
  EXPECT_THROW((void)none.at("x"), std::out_of_range);
  EXPECT_TRUE(Map(std::map<std::string, std::string>{}) == none);
}

}  // namespace
}  // namespace gpupack
