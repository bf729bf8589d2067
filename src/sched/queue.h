// Pending-job queue and per-queue GPU quotas.
//
// Contract:
// - JobQueue orders pending jobs by priority (higher first), then by
//   submission sequence (FIFO within a priority), then by job id. It only
//   orders; whether a job that does not fit blocks the ones behind it is the
//   caller's queueing mode (see QueueMode): kNoBlocking skips it (no
//   head-of-line blocking), kStrictFifo stops at it, kBackfill reserves room
//   for it and lets later jobs start only where they do not delay it.
//   push/remove are O(log n); iteration is in order.
// - QuotaBook caps the GPU milli each named queue may hold at once; a queue
//   without a quota is unlimited. admits() is O(1) on average. Not
//   thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpupack {

enum class QueueMode { kNoBlocking, kStrictFifo, kBackfill };

class JobQueue {
 public:
  struct Entry {
    int priority;
    int64_t seq;
    int32_t job;
    friend bool operator<(const Entry& a, const Entry& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.seq != b.seq) return a.seq < b.seq;
      return a.job < b.job;
    }
  };

  // Returns false when the job is already queued.
  bool push(int32_t job, int priority, int64_t seq);
  // Returns false when the job is not queued.
  bool remove(int32_t job);
  bool contains(int32_t job) const { return keys_.count(job) != 0; }
  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  // Job ids in queue order.
  std::vector<int32_t> ordered() const;
  std::set<Entry>::const_iterator begin() const { return order_.begin(); }
  std::set<Entry>::const_iterator end() const { return order_.end(); }

 private:
  std::set<Entry> order_;
  std::unordered_map<int32_t, Entry> keys_;
};

class QuotaBook {
 public:
  // quota_milli < 0 removes the cap.
  void set_quota(const std::string& queue, int64_t quota_milli);
  bool admits(const std::string& queue, int64_t gpu_milli) const;
  void charge(const std::string& queue, int64_t gpu_milli) { used_[queue] += gpu_milli; }
  void release(const std::string& queue, int64_t gpu_milli) { used_[queue] -= gpu_milli; }
  int64_t used(const std::string& queue) const;

 private:
  std::unordered_map<std::string, int64_t> quota_;
  std::unordered_map<std::string, int64_t> used_;
};

}  // namespace gpupack
