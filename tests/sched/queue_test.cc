#include "sched/queue.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

TEST(JobQueue, HigherPriorityFirstThenFifo) {
  JobQueue q;
  EXPECT_TRUE(q.push(10, 0, 1));
  EXPECT_TRUE(q.push(11, 5, 2));
  EXPECT_TRUE(q.push(12, 0, 0));
  EXPECT_TRUE(q.push(13, 5, 3));
  EXPECT_FALSE(q.push(13, 5, 3));
  EXPECT_EQ(q.ordered(), (std::vector<int32_t>{11, 13, 12, 10}));
  EXPECT_TRUE(q.remove(13));
  EXPECT_FALSE(q.remove(13));
  EXPECT_EQ(q.ordered(), (std::vector<int32_t>{11, 12, 10}));
  EXPECT_EQ(q.size(), 3u);
}

TEST(QuotaBook, CapsANamedQueueOnly) {
  QuotaBook b;
  b.set_quota("team-a", 4000);
  EXPECT_TRUE(b.admits("team-a", 4000));
  b.charge("team-a", 3000);
  EXPECT_FALSE(b.admits("team-a", 2000));
  EXPECT_TRUE(b.admits("team-a", 1000));
  EXPECT_TRUE(b.admits("other", 1'000'000));
  b.release("team-a", 3000);
  EXPECT_TRUE(b.admits("team-a", 4000));
  b.set_quota("team-a", -1);
  EXPECT_TRUE(b.admits("team-a", 9'000'000));
}

}  // namespace
}  // namespace gpupack
