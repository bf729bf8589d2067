#include "util/work_pool.h"

namespace gpupack {

WorkPool::WorkPool(int threads) {
  for (int lane = 1; lane < threads; ++lane) workers_.emplace_back([this, lane] { work(lane); });
}

WorkPool::~WorkPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Takes tasks of the current batch until none is left (`lock` holds mu_
// on entry and exit; each task runs without it).
void WorkPool::drain(std::unique_lock<std::mutex>& lock, int lane) {
  while (next_ < tasks_) {
    const int task = next_++;
    ++running_;
    lock.unlock();
    try {
      (*fn_)(task, lane);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      lock.unlock();
    }
    lock.lock();
    if (--running_ == 0 && next_ >= tasks_) done_.notify_all();
  }
}

void WorkPool::work(int lane) {
  std::unique_lock lock(mu_);
  uint64_t seen = 0;
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (batch_ != seen && next_ < tasks_); });
    if (stop_) return;
    seen = batch_;
    drain(lock, lane);
  }
}

void WorkPool::run(int tasks, const std::function<void(int task, int lane)>& fn) {
  if (workers_.empty() || tasks <= 1) {
    for (int t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  std::unique_lock lock(mu_);
  fn_ = &fn;
  tasks_ = tasks;
  next_ = 0;
  running_ = 0;
  error_ = nullptr;
  ++batch_;
  wake_.notify_all();
  drain(lock, 0);
  done_.wait(lock, [&] { return next_ >= tasks_ && running_ == 0; });
  fn_ = nullptr;
  tasks_ = 0;
  if (std::exception_ptr e = std::exchange(error_, nullptr)) {
    lock.unlock();
    std::rethrow_exception(e);
  }
}

}  // namespace gpupack
