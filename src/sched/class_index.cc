#include "sched/class_index.h"

namespace gpupack {

void ClassIndex::push(const NodeClasses& classes, int32_t c, const Record& r, bool heapify) {
  const Entry e{r.score, classes.order(r.first), r.first, c, r.incarnation, r.assessment};
  heap_.push_back(e);
  if (heapify) std::push_heap(heap_.begin(), heap_.end(), below);
  if (!lowest_) return;
  low_heap_.push_back(e);
  if (heapify) std::push_heap(low_heap_.begin(), low_heap_.end(), higher);
}

void ClassIndex::compact(const NodeClasses& classes) {
  heap_.clear();
  low_heap_.clear();
  for (size_t c = 0; c < records_.size(); ++c)
    if (records_[c].fits) push(classes, static_cast<int32_t>(c), records_[c], false);
  std::make_heap(heap_.begin(), heap_.end(), below);
  std::make_heap(low_heap_.begin(), low_heap_.end(), higher);
}

const ClassIndex::Entry* ClassIndex::best() {
  while (!heap_.empty() && stale(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), below);
    heap_.pop_back();
  }
  return heap_.empty() ? nullptr : &heap_.front();
}

const ClassIndex::Entry* ClassIndex::lowest() {
  while (!low_heap_.empty() && stale(low_heap_.front())) {
    std::pop_heap(low_heap_.begin(), low_heap_.end(), higher);
    low_heap_.pop_back();
  }
  return low_heap_.empty() ? nullptr : &low_heap_.front();
}

}  // namespace gpupack
