// ClassIndex: for one request shape, the best class of identical nodes,
// kept across decisions instead of found by a walk over every class.
//
// A Scheduler keeps one per shape of plain request it has decided (the shape
// is every field the filter and a state-only policy read: CPU, memory, GPU
// count and milli, allowed models). It holds, per node class, whether the
// class fits the shape and its score, and a max-heap of the fitting classes
// by (score, then the lowest tie order of a member, then its node index):
// exactly the order in which Scheduler::decide picks nodes.
//
// Contract:
// - sync() brings the index up to date with `state`: it re-reads only the
//   classes named in the state's class change log since the last sync
//   (model/node_classes.h); when the history differs (another state, a copy,
//   a new tie order) or the log no longer holds the entries, it rebuilds
//   from every live class. A class's fit and score are assessed once per
//   incarnation (its state never changes while it has members), which is
//   valid because the policy scores by node state alone
//   (Policy::scores_by_state) and the shape fixes the request.
// - best() is the winning class's heap entry after sync(), or nullptr when
//   no class fits; feasible_nodes() counts the members of fitting classes.
//   With set_track_lowest(true) (a policy that min-max normalises) a second
//   heap gives lowest(), a fitting class of the lowest score: the winner of
//   normalised scores is still best() (only the highest raw score reaches
//   100), and its final score is 100, or 0 when every score is the same.
// - rescore(cls) has the next sync() assess that class again although its
//   state did not change (the policy's score of it did: Policy::rescored_nodes);
//   its earlier heap entries are then stale. A sync() that rebuilds drops it;
//   more rescore() calls before a sync() than class ids known make it rebuild.
// - Cost: O(log entries read + their heap pushes); a rebuild is one walk.
//   Memory: one small record per class id, one heap entry per fitting class
//   (stale entries are dropped when they surface and compacted when either
//   heap is twice the fitting classes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/cluster_state.h"

namespace gpupack {

class ClassIndex {
 public:
  struct Entry {
    int64_t score = 0;
    int64_t order = 0;  // tie order of the class's first member
    int32_t first = 0;  // that member's node index
    int32_t cls = 0;
    uint32_t incarnation = 0;
    uint32_t assessment = 0;  // the Record's assessment it was pushed from
  };

  // `assess(live, &score)`: does the class (its Live entry) fit the shape,
  // and if so its score. Called only for classes not assessed yet.
  template <class Assess>
  void sync(const ClusterState& state, Assess&& assess);
  const Entry* best();
  const Entry* lowest();
  void rescore(int32_t cls) {
    // An index no decision reads for long holds at most about one entry
    // per class id: past that its next sync() rebuilds instead.
    if (rescore_.size() > records_.size()) {
      state_ = nullptr;
      rescore_.clear();
      return;
    }
    rescore_.push_back(cls);
  }
  int64_t feasible_nodes() const { return feasible_nodes_; }
  // Changing it rebuilds at the next sync().
  void set_track_lowest(bool on) {
    if (on != lowest_) state_ = nullptr;
    lowest_ = on;
  }

 private:
  struct Record {
    uint32_t incarnation = 0;  // 0 = nothing known
    uint32_t assessment = 0;   // which assessment of the index set `score`
    int32_t size = 0;
    int32_t first = -1;
    bool fits = false;
    int64_t score = 0;
  };
  // Entry a ranks below entry b.
  static bool below(const Entry& a, const Entry& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.order != b.order) return a.order > b.order;
    return a.first > b.first;
  }
  static bool higher(const Entry& a, const Entry& b) { return a.score > b.score; }
  bool stale(const Entry& e) const {
    const Record& r = records_[static_cast<size_t>(e.cls)];
    return !r.fits || r.incarnation != e.incarnation || r.first != e.first || r.assessment != e.assessment;
  }
  // Drops what the record knew (its counts leave the totals); its heap
  // entries go stale.
  void forget(Record& r) {
    if (r.fits) {
      feasible_nodes_ -= r.size;
      --fitting_classes_;
    }
    r = Record{};
  }
  void push(const NodeClasses& classes, int32_t c, const Record& r, bool heapify);
  template <class Assess>
  void read(const NodeClasses& classes, int32_t c, Assess& assess, bool heapify);
  void compact(const NodeClasses& classes);

  const ClusterState* state_ = nullptr;
  uint64_t log_id_ = 0, order_stamp_ = 0, cursor_ = 0;
  std::vector<Record> records_;  // by class id
  std::vector<Entry> heap_;
  std::vector<Entry> low_heap_;   // by score, lowest on top (when lowest_)
  std::vector<int32_t> rescore_;  // classes to assess again at the next sync
  uint32_t assessments_ = 0;
  bool lowest_ = false;
  int64_t feasible_nodes_ = 0;
  size_t fitting_classes_ = 0;
};

template <class Assess>
void ClassIndex::read(const NodeClasses& classes, int32_t c, Assess& assess, bool heapify) {
  if (static_cast<size_t>(c) >= records_.size()) records_.resize(classes.slots());
  Record& r = records_[static_cast<size_t>(c)];
  const bool alive = classes.alive(c);
  if (r.incarnation != 0 && (!alive || classes.incarnation(c) != r.incarnation)) forget(r);
  if (!alive) return;
  const NodeClasses::Live& live = classes.live_of(c);
  if (r.incarnation == 0) {
    r.incarnation = classes.incarnation(c);
    r.assessment = ++assessments_;
    r.size = live.size;
    r.first = live.first;
    r.fits = assess(live, &r.score);
    if (r.fits) {
      feasible_nodes_ += r.size;
      ++fitting_classes_;
      push(classes, c, r, heapify);
    }
    return;
  }
  if (r.fits) feasible_nodes_ += live.size - r.size;
  r.size = live.size;
  if (live.first != r.first) {
    r.first = live.first;
    if (r.fits) push(classes, c, r, heapify);
  }
}

template <class Assess>
void ClassIndex::sync(const ClusterState& state, Assess&& assess) {
  const NodeClasses& classes = state.node_classes();
  const bool same_history = state_ == &state && log_id_ == classes.log_id() &&
                            order_stamp_ == state.tie_order_stamp() && classes.log_holds(cursor_);
  if (!same_history) {
    state_ = &state;
    log_id_ = classes.log_id();
    order_stamp_ = state.tie_order_stamp();
    records_.assign(classes.slots(), Record{});
    heap_.clear();
    low_heap_.clear();
    feasible_nodes_ = 0;
    fitting_classes_ = 0;
    for (const NodeClasses::Live& l : classes.live()) read(classes, l.id, assess, false);
    std::make_heap(heap_.begin(), heap_.end(), below);
    std::make_heap(low_heap_.begin(), low_heap_.end(), higher);
  } else {
    for (uint64_t i = cursor_; i < classes.log_end(); ++i) read(classes, classes.logged(i), assess, true);
    for (int32_t c : rescore_) {
      if (static_cast<size_t>(c) >= records_.size()) continue;  // never read: assessed when it is
      Record& r = records_[static_cast<size_t>(c)];
      if (r.incarnation == 0) continue;
      forget(r);  // its heap entries go stale (another assessment)
      read(classes, c, assess, true);
    }
    if (std::max(heap_.size(), low_heap_.size()) > 2 * fitting_classes_ + 64) compact(classes);
  }
  rescore_.clear();
  cursor_ = classes.log_end();
}

}  // namespace gpupack
