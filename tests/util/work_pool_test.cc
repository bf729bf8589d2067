// WorkPool: every task runs once, on a lane no other task holds at that
// moment; an exception reaches the caller and the pool stays usable.
#include "util/work_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpupack {
namespace {

TEST(WorkPool, RunsEveryTaskOnceOnAFreeLane) {
  WorkPool pool(3);
  ASSERT_EQ(pool.lanes(), 3);
  for (int batch = 0; batch < 50; ++batch) {
    const int tasks = 1 + batch * 7;
    std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
    std::vector<std::atomic<int>> busy(3);
    std::atomic<int> overlaps{0}, bad_lane{0};
    pool.run(tasks, [&](int t, int lane) {
      if (lane < 0 || lane >= 3) {
        ++bad_lane;
        return;
      }
      if (busy[static_cast<size_t>(lane)].fetch_add(1) != 0) ++overlaps;
      ++runs[static_cast<size_t>(t)];
      if (t % 5 == 0) std::this_thread::yield();
      busy[static_cast<size_t>(lane)].fetch_sub(1);
    });
    EXPECT_EQ(bad_lane.load(), 0);
    EXPECT_EQ(overlaps.load(), 0) << "two tasks ran on one lane at once";
    for (int t = 0; t < tasks; ++t)
      ASSERT_EQ(runs[static_cast<size_t>(t)].load(), 1) << "batch " << batch << " task " << t;
  }
}

TEST(WorkPool, UsesMoreThanOneThreadWhenTasksWait) {
  WorkPool pool(2);
  std::atomic<int> started{0};
  std::vector<int> lane_of(2, -1);
  // Each task waits for the other to start: only two threads finish it.
  pool.run(2, [&](int t, int lane) {
    lane_of[static_cast<size_t>(t)] = lane;
    ++started;
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_NE(lane_of[0], lane_of[1]);
}

TEST(WorkPool, OneThreadRunsInlineInTaskOrder) {
  WorkPool pool(1);
  EXPECT_EQ(pool.lanes(), 1);
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  bool same_thread = true;
  pool.run(5, [&](int t, int lane) {
    EXPECT_EQ(lane, 0);
    same_thread = same_thread && std::this_thread::get_id() == caller;
    order.push_back(t);
  });
  EXPECT_TRUE(same_thread);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(WorkPool, AnExceptionReachesTheCallerAndThePoolGoesOn) {
  WorkPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(8,
                        [&](int t, int) {
                          ++ran;
                          if (t == 3) throw std::runtime_error("task 3");
                        }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8) << "the other tasks still run";
  std::atomic<int> after{0};
  pool.run(10, [&](int, int) { ++after; });
  EXPECT_EQ(after.load(), 10);
}

}  // namespace
}  // namespace gpupack
