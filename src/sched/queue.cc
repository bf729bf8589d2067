#include "sched/queue.h"

namespace gpupack {

bool JobQueue::push(int32_t job, int priority, int64_t seq) {
  const Entry e{priority, seq, job};
  if (!keys_.emplace(job, e).second) return false;
  order_.insert(e);
  return true;
}

bool JobQueue::remove(int32_t job) {
  auto it = keys_.find(job);
  if (it == keys_.end()) return false;
  order_.erase(it->second);
  keys_.erase(it);
  return true;
}

std::vector<int32_t> JobQueue::ordered() const {
  std::vector<int32_t> out;
  out.reserve(order_.size());
  for (const Entry& e : order_) out.push_back(e.job);
  return out;
}

void QuotaBook::set_quota(const std::string& queue, int64_t quota_milli) {
  if (quota_milli < 0)
    quota_.erase(queue);
  else
    quota_[queue] = quota_milli;
}

bool QuotaBook::admits(const std::string& queue, int64_t gpu_milli) const {
  auto q = quota_.find(queue);
  if (q == quota_.end()) return true;
  return used(queue) + gpu_milli <= q->second;
}

int64_t QuotaBook::used(const std::string& queue) const {
  auto u = used_.find(queue);
  return u == used_.end() ? 0 : u->second;
}

}  // namespace gpupack
