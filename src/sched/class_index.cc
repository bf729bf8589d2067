#include "sched/class_index.h"

namespace gpupack {

void ClassIndex::push(const NodeClasses& classes, int32_t c, const Record& r, bool heapify) {
  heap_.push_back({r.score, classes.order(r.first), r.first, c, r.incarnation});
  if (heapify) std::push_heap(heap_.begin(), heap_.end(), below);
}

void ClassIndex::compact(const NodeClasses& classes) {
  heap_.clear();
  for (size_t c = 0; c < records_.size(); ++c)
    if (records_[c].fits) push(classes, static_cast<int32_t>(c), records_[c], false);
  std::make_heap(heap_.begin(), heap_.end(), below);
}

const ClassIndex::Entry* ClassIndex::best() {
  while (!heap_.empty() && stale(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), below);
    heap_.pop_back();
  }
  return heap_.empty() ? nullptr : &heap_.front();
}

}  // namespace gpupack
