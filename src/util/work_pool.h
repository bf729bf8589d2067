// WorkPool: a fixed set of worker threads that run one batch of tasks at a
// time, for splitting a single decision's scoring across cores.
//
// Contract:
// - WorkPool(threads) starts threads - 1 workers (the caller of run() is
//   the last lane); threads <= 1 starts none and run() is a plain loop.
// - run(tasks, fn) calls fn(task, lane) once for every task in [0, tasks)
//   and returns when all have returned. `lane` in [0, lanes()) names the
//   thread running the task: no two tasks run on one lane at the same time,
//   so per-lane scratch needs no lock. Which lane runs which task, and in
//   what order, is not fixed: callers reduce results by task index to stay
//   deterministic. An exception from fn is rethrown by run() (the first one;
//   the other tasks still run).
// - One run() at a time (callers serialise; Scheduler serves one thread).
//   The destructor stops the workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gpupack {

class WorkPool {
 public:
  explicit WorkPool(int threads);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int lanes() const { return static_cast<int>(workers_.size()) + 1; }
  void run(int tasks, const std::function<void(int task, int lane)>& fn);

 private:
  void work(int lane);
  void drain(std::unique_lock<std::mutex>& lock, int lane);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* fn_ = nullptr;
  int tasks_ = 0, next_ = 0, running_ = 0;
  uint64_t batch_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace gpupack
