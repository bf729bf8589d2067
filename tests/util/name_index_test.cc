// NameIndex: the same answers as std::unordered_map, one name at a time and
// in batches.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/name_index.h"

namespace gpupack {
namespace {

TEST(NameIndex, FindsInsertedNamesAndNothingElse) {
  NameIndex index;
  EXPECT_EQ(index.find("a"), -1);
  std::vector<int> none(2, 7);
  const std::vector<std::string> two = {"a", ""};
  index.find_many(two, none);
  EXPECT_EQ(none, (std::vector<int>{-1, -1}));
  EXPECT_TRUE(index.insert("gpu-node-1", 4));
  EXPECT_FALSE(index.insert("gpu-node-1", 5));  // present: unchanged
  EXPECT_EQ(index.find("gpu-node-1"), 4);
  index.assign("gpu-node-1", 6);
  EXPECT_EQ(index.at("gpu-node-1"), 6);
  EXPECT_TRUE(index.insert("", 0));  // the empty name is a name
  EXPECT_EQ(index.find(""), 0);
  EXPECT_EQ(index.find("gpu-node-"), -1);  // a prefix is another name
  EXPECT_EQ(index.find("gpu-node-10"), -1);
  EXPECT_THROW(index.at("gpu-node-2"), std::out_of_range);
  EXPECT_EQ(index.size(), 2u);
  index.clear();
  EXPECT_EQ(index.find("gpu-node-1"), -1);
  EXPECT_TRUE(index.empty());
  EXPECT_THROW(index.find_many(two, std::span<int>(none.data(), 1)), std::invalid_argument);
}

// Random names of random lengths (short ones collide in their tags, long
// ones are not inline strings), looked up among absent ones, against the
// standard map, across growth.
TEST(NameIndex, AgreesWithTheStandardMapAcrossGrowth) {
  std::mt19937 rng(7);
  auto random_name = [&] {
    std::string s(std::uniform_int_distribution<int>(0, 40)(rng), 'x');
    for (char& c : s) c = static_cast<char>('a' + std::uniform_int_distribution<int>(0, 3)(rng));
    return s;
  };
  NameIndex index;
  std::unordered_map<std::string, int> truth;
  for (int step = 0; step < 30000; ++step) {
    const std::string name = random_name();
    const int value = step;
    if (step % 3 == 0) {
      index.assign(name, value);
      truth[name] = value;
    } else {
      EXPECT_EQ(index.insert(name, value), truth.emplace(name, value).second);
    }
    if (step % 1000 == 999) {
      std::vector<std::string> probe;
      for (int k = 0; k < 700; ++k) probe.push_back(random_name());
      std::vector<int> got(probe.size());
      index.find_many(probe, got);
      for (size_t k = 0; k < probe.size(); ++k) {
        auto it = truth.find(probe[k]);
        const int want = it == truth.end() ? -1 : it->second;
        ASSERT_EQ(got[k], want) << probe[k];
        ASSERT_EQ(index.find(probe[k]), want) << probe[k];
      }
    }
  }
  EXPECT_EQ(index.size(), truth.size());
  for (const auto& [name, value] : truth) ASSERT_EQ(index.find(name), value);
}

TEST(NameIndex, ReserveKeepsEntries) {
  NameIndex index;
  for (int i = 0; i < 100; ++i) index.insert("n" + std::to_string(i), i);
  index.reserve(100000);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(index.find("n" + std::to_string(i)), i);
  EXPECT_EQ(index.find("n100"), -1);
}

}  // namespace
}  // namespace gpupack
