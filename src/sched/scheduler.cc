#include "sched/scheduler.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "sched/filter.h"

namespace gpupack {

Scheduler::Scheduler(Policy& policy, std::vector<int64_t> node_rank)
    : policy_(policy), node_rank_(std::move(node_rank)) {}

Decision Scheduler::evaluate(const ClusterState& state, const Request& req, std::span<const NodeId> candidates,
                             std::vector<ScoredNode>* scored) {
  if (!node_rank_.empty() && node_rank_.size() != static_cast<size_t>(state.node_count()))
    throw std::invalid_argument("node rank table does not match the cluster's node count");
  if (!node_mask_.empty() && node_mask_.size() != static_cast<size_t>(state.node_count()))
    throw std::invalid_argument("node mask does not match the cluster's node count");
  for (NodeId n : candidates)
    if (!valid(n) || index(n) >= static_cast<size_t>(state.node_count()))
      throw std::invalid_argument("candidate node out of range");
  policy_.prepare(state, req);
  if (policy_.scoring_epoch() != epoch_) {  // scores kept per class are stale
    // All of them, or only the classes of the nodes the policy names.
    rescored_.clear();
    if (!indexes_.empty() && policy_.rescored_nodes(epoch_, &rescored_)) {
      const NodeClasses& classes = state.node_classes();
      rescored_classes_.clear();
      for (NodeId n : rescored_) rescored_classes_.push_back(classes.class_of(static_cast<int32_t>(index(n))));
      std::sort(rescored_classes_.begin(), rescored_classes_.end());
      rescored_classes_.erase(std::unique(rescored_classes_.begin(), rescored_classes_.end()), rescored_classes_.end());
      for (auto& [shape, class_index] : indexes_)
        for (int32_t c : rescored_classes_) class_index.rescore(c);
    } else {
      indexes_.clear();
    }
    epoch_ = policy_.scoring_epoch();
  }
  Decision d;
  const bool plain = req.is_plain();
  // Either every node (or candidate) in turn, or one node per class of
  // identical nodes standing for `weight` nodes (see the header).
  const bool by_class = candidates.empty() && scored == nullptr && classes_apply(state);
  const std::span<const NodeClasses::Live> live =
      by_class ? state.node_classes().live() : std::span<const NodeClasses::Live>{};
  const int count = by_class             ? static_cast<int>(live.size())
                    : candidates.empty() ? state.node_count()
                                         : static_cast<int>(candidates.size());
  auto node_at = [&](int k) {
    if (by_class) return NodeId{live[static_cast<size_t>(k)].first};
    return candidates.empty() ? NodeId{k} : candidates[static_cast<size_t>(k)];
  };
  auto weight = [&](int k) { return by_class ? live[static_cast<size_t>(k)].size : 1; };
  // A class whose summary shows the request cannot fit is skipped without
  // touching its node (a necessary condition of the filter below).
  auto ruled_out_summary = [&](const NodeSummary& s) {
    if (s.cpu_free_milli < req.cpu_milli || s.memory_free_mib < req.memory_mib) return true;
    if (!plain || !s.plain || req.gpu_count == 0) return false;
    if (s.gpu_count < req.gpu_count) return true;
    if (req.gpu_milli >= kGpuMilliPerGpu) return s.whole_free_gpus < req.gpu_count;
    return s.max_gpu_free_milli < req.gpu_milli;
  };
  auto ruled_out = [&](int k) { return by_class && ruled_out_summary(live[static_cast<size_t>(k)].summary); };
  // Filter: the openb check, or the hardware placement (kept in the lane's
  // `hw`, per thread of a parallel walk).
  auto feasible = [&](Lane& lane, NodeId n) {
    if (!allowed(index(n))) return false;
    if (plain && !state.has_hardware_setup(n)) {
      lane.hw.node = kNoNode;
      return fits_plain(state, n, req);
    }
    const Placement p = choose_placement(state, n, req, placement_);
    lane.hw = p.assignment;
    return p.ok();
  };
  auto placed_at = [&](const Lane& lane, NodeId n, const NodeScore& s) -> Assignment {
    if (valid(lane.hw.node)) return lane.hw;
    return {n, s.gpu_mask, req.gpu_count > 0 ? req.gpu_milli : 0};
  };
  // Walking a candidate list (the extender's), members of one class of
  // identical nodes share the fit, score and GPUs: the first member met is
  // assessed, the others take its result (the mask stays per node).
  const bool memo = !by_class && count > 1 && use_classes_ && policy_.scores_by_state();
  auto assess = [&](Lane& lane, NodeId n, NodeScore& s, Assignment& a) {
    if (!memo) {
      if (!feasible(lane, n)) return false;
      s = policy_.score(state, n, req);
      a = placed_at(lane, n, s);
      return true;
    }
    if (!allowed(index(n))) return false;
    const size_t c = static_cast<size_t>(state.node_classes().class_of(static_cast<int32_t>(index(n))));
    if (c >= lane.memo.size()) lane.memo.resize(std::max(c + 1, lane.memo.size() * 2));
    ClassMemo& m = lane.memo[c];
    if (m.generation != lane.memo_generation) {
      m.generation = lane.memo_generation;
      m.fits = feasible(lane, n);
      if (m.fits) {
        m.score = policy_.score(state, n, req);
        m.assignment = placed_at(lane, n, m.score);
      }
    }
    if (!m.fits) return false;
    s = m.score;
    a = m.assignment;
    a.node = n;
    return true;
  };
  // A plain request by class: the shape's index of classes
  // (sched/class_index.h) reads only the classes that changed since this
  // shape's last decision, not every class.
  if (by_class && plain && use_index_) {
    Lane& lane = lanes_[0];
    ClassIndex& index =
        indexes_[ShapeKey{req.cpu_milli, req.memory_mib, req.gpu_count, req.gpu_milli, req.allowed_models}];
    const bool normalizes = policy_.normalizes_scores();
    index.set_track_lowest(normalizes);
    index.sync(state, [&](const NodeClasses::Live& l, int64_t* score) {
      if (ruled_out_summary(l.summary)) return false;
      const NodeId n{l.first};
      if (!feasible(lane, n)) return false;
      *score = policy_.score(state, n, req).score;
      return true;
    });
    if (const ClassIndex::Entry* top = index.best()) {
      const NodeId n{top->first};
      if (!feasible(lane, n)) throw std::logic_error("class index: the best class no longer fits");
      d.assignment = placed_at(lane, n, policy_.score(state, n, req));
      // Min-max normalised, only the highest raw score reaches 100 (all 0
      // when every fitting class scores the same): the same winner.
      if (normalizes) {
        const ClassIndex::Entry* low = index.lowest();
        if (low == nullptr) throw std::logic_error("class index: a best class but no lowest one");
        d.score = low->score == top->score ? 0 : 100;
      } else {
        d.score = top->score;
      }
    }
    d.feasible_nodes = static_cast<int>(index.feasible_nodes());
    if (!d.placed() && explain_failures_) d.reason = most_common_reason(state, req);
    return d;
  }
  // The walk: every node, class or candidate in [begin, end) that fits goes
  // to `part`, as its winner (highest score, then lowest rank, then lowest
  // node index) or, when scores are listed or normalised, into `out`.
  const bool listing = policy_.normalizes_scores() || scored != nullptr;
  // `part` is filled on the stack and stored once (parts of a parallel walk
  // sit side by side in memory).
  auto walk = [&](int begin, int end, Lane& lane, Part& result, std::vector<ScoredNode>* out) {
    Part part;
    NodeScore s;
    Assignment a;
    const size_t first = out != nullptr ? out->size() : 0;
    for (int k = begin; k < end; ++k) {
      if (ruled_out(k)) continue;
      const NodeId n = node_at(k);
      if (!assess(lane, n, s, a)) continue;
      part.feasible += weight(k);
      if (!listing) {
        consider(part, s.score, rank(n), a);
        continue;
      }
      if (out->size() == first || s.score < part.lo) part.lo = s.score;
      if (out->size() == first || s.score > part.hi) part.hi = s.score;
      out->push_back({n, s.score, a});
    }
    part.list = std::move(result.list);
    result = std::move(part);
  };
  auto next_generation = [](Lane& lane) {
    if (++lane.memo_generation == 0) {
      lane.memo.clear();
      lane.memo_generation = 1;
    }
  };
  std::vector<ScoredNode>& list = scored != nullptr ? *scored : scratch_;
  const size_t first = scored != nullptr ? list.size() : 0;
  if (scored == nullptr) list.clear();
  Part total;
  const bool parallel = pool_ != nullptr && pool_->lanes() > 1 && policy_.parallel_score() && count >= parallel_min_ &&
                        (by_class || distinct_candidates(state, candidates, memo));
  if (!parallel) {
    Lane& lane = lanes_[0];
    if (memo) next_generation(lane);
    walk(0, count, lane, total, listing ? &list : nullptr);
  } else {
    // Contiguous ranges, several per lane (their costs differ), merged in
    // range order: the one-thread walk's answer.
    ++parallel_walks_;
    const int tasks = std::min(count, 4 * pool_->lanes());
    if (lanes_.size() < static_cast<size_t>(pool_->lanes())) lanes_.resize(static_cast<size_t>(pool_->lanes()));
    if (memo)
      for (Lane& lane : lanes_) next_generation(lane);
    parts_.assign(static_cast<size_t>(tasks), Part{});
    pool_->run(tasks, [&](int t, int lane) {
      Part& part = parts_[static_cast<size_t>(t)];
      const int begin = static_cast<int>(static_cast<int64_t>(count) * t / tasks);
      const int end = static_cast<int>(static_cast<int64_t>(count) * (t + 1) / tasks);
      walk(begin, end, lanes_[static_cast<size_t>(lane)], part, listing ? &part.list : nullptr);
    });
    bool any = false;  // a node of an earlier range fits (listing)
    for (Part& part : parts_) {
      total.feasible += part.feasible;
      if (!listing) {
        if (part.placed) consider(total, part.score, part.rank, part.assignment);
        continue;
      }
      if (part.list.empty()) continue;
      if (!any || part.lo < total.lo) total.lo = part.lo;
      if (!any || part.hi > total.hi) total.hi = part.hi;
      any = true;
      list.insert(list.end(), part.list.begin(), part.list.end());
    }
  }
  if (listing) {
    const int64_t lo = total.lo, hi = total.hi;
    for (size_t k = first; k < list.size(); ++k) {
      ScoredNode& c = list[k];
      if (policy_.normalizes_scores()) c.score = hi == lo ? 0 : (c.score - lo) * 100 / (hi - lo);
      consider(total, c.score, rank(c.node), c.assignment);
    }
  }
  d.feasible_nodes = static_cast<int>(total.feasible);
  if (total.placed) {
    d.assignment = total.assignment;
    d.score = total.score;
  }
  if (!d.placed() && explain_failures_) d.reason = most_common_reason(state, req);
  return d;
}

void Scheduler::consider(Part& p, int64_t score, int64_t rank, const Assignment& a) {
  if (!p.placed || score > p.score ||
      (score == p.score && (rank < p.rank || (rank == p.rank && a.node < p.assignment.node)))) {
    p.placed = true;
    p.score = score;
    p.rank = rank;
    p.assignment = a;
  }
}

// Can a candidate walk run on several threads: no node named twice (the
// policy's per-node caches would be written from two threads), and, when
// classes share one assessment, enough distinct classes to be worth it.
bool Scheduler::distinct_candidates(const ClusterState& state, std::span<const NodeId> candidates, bool by_class_memo) {
  if (candidates.empty()) return true;  // every node once
  if (seen_.size() != static_cast<size_t>(state.node_count())) {
    seen_.assign(static_cast<size_t>(state.node_count()), 0);
    seen_stamp_ = 0;
  }
  if (++seen_stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    seen_stamp_ = 1;
  }
  if (seen_stamp_ == 1) std::fill(class_seen_.begin(), class_seen_.end(), 0);  // stamps start again
  const NodeClasses& classes = state.node_classes();
  std::vector<uint32_t>& class_seen = class_seen_;
  if (by_class_memo && class_seen.size() < classes.slots()) class_seen.resize(classes.slots(), 0);
  int distinct = 0;
  for (NodeId n : candidates) {
    uint32_t& mark = seen_[index(n)];
    if (mark == seen_stamp_) return false;
    mark = seen_stamp_;
    if (!by_class_memo) continue;
    uint32_t& c = class_seen[static_cast<size_t>(classes.class_of(static_cast<int32_t>(index(n))))];
    if (c != seen_stamp_) {
      c = seen_stamp_;
      ++distinct;
    }
  }
  return !by_class_memo || distinct >= parallel_min_;
}

bool Scheduler::classes_apply(const ClusterState& state) {
  if (!use_classes_ || !node_mask_.empty() || !policy_.scores_by_state()) return false;
  if (order_checked_for_ != &state || order_checked_stamp_ != state.tie_order_stamp()) {
    // Once per state and tie order: is the state's order this rank?
    order_checked_for_ = &state;
    order_checked_stamp_ = state.tie_order_stamp();
    const NodeClasses& classes = state.node_classes();
    order_matches_ = node_rank_.empty() ? classes.order_is_index() : !classes.order_is_index();
    for (size_t i = 0; order_matches_ && i < node_rank_.size(); ++i)
      order_matches_ = classes.order(static_cast<int32_t>(i)) == node_rank_[i];
  }
  return order_matches_;
}

Decision Scheduler::schedule(ClusterState& state, PodId pod, const Request& req) {
  Decision d = decide(state, req);
  if (d.placed()) {
    Status st = state.bind(pod, req, d.assignment);
    if (!st.is_ok()) throw std::logic_error("scheduler chose an assignment that does not fit: " + st.message);
  }
  return d;
}

Dimension Scheduler::most_common_reason(const ClusterState& state, const Request& req) const {
  std::array<int, kDimensionCount> counts{};
  for (int i = 0; i < state.node_count(); ++i) {
    if (!allowed(i)) continue;
    const Dimension d = failed_dimension(state, NodeId{i}, req);
    if (d != Dimension::kNone) ++counts[static_cast<size_t>(d)];
  }
  size_t best = 0;
  for (size_t k = 1; k < counts.size(); ++k)
    if (counts[k] > counts[best]) best = k;
  return counts[best] > 0 ? static_cast<Dimension>(best) : Dimension::kNone;
}

}  // namespace gpupack
