#include "model/workload.h"

#include <algorithm>
#include <numeric>

namespace gpupack {

void Workload::sort_by_name() {
  std::vector<size_t> idx(names.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  Workload out;
  for (size_t i : idx) {
    out.names.push_back(std::move(names[i]));
    out.requests.push_back(requests[i]);
    out.model_keys.push_back(std::move(model_keys[i]));
  }
  *this = std::move(out);
}

int64_t Workload::total_gpu_milli() const {
  int64_t total = 0;
  for (const Request& r : requests) total += r.total_gpu_milli();
  return total;
}

}  // namespace gpupack
