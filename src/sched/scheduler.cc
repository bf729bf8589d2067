#include "sched/scheduler.h"

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
  // Filter: the openb check, or the hardware placement (kept in `hw`).
  Assignment hw;
  auto feasible = [&](NodeId n) {
    if (!allowed(index(n))) return false;
    if (plain && !state.has_hardware_setup(n)) {
      hw.node = kNoNode;
      return fits_plain(state, n, req);
    }
    const Placement p = choose_placement(state, n, req, placement_);
    hw = p.assignment;
    return p.ok();
  };
  auto placed_at = [&](NodeId n, const NodeScore& s) -> Assignment {
    if (valid(hw.node)) return hw;
    return {n, s.gpu_mask, req.gpu_count > 0 ? req.gpu_milli : 0};
  };
  // Walking a candidate list (the extender's), members of one class of
  // identical nodes share the fit, score and GPUs: the first member met is
  // assessed, the others take its result (the mask stays per node).
  const bool memo = !by_class && count > 1 && use_classes_ && policy_.scores_by_state();
  if (memo) {
    if (++memo_generation_ == 0) {
      memo_.clear();
      memo_generation_ = 1;
    }
  }
  auto assess = [&](NodeId n, NodeScore& s, Assignment& a) {
    if (!memo) {
      if (!feasible(n)) return false;
      s = policy_.score(state, n, req);
      a = placed_at(n, s);
      return true;
    }
    if (!allowed(index(n))) return false;
    const size_t c = static_cast<size_t>(state.node_classes().class_of(static_cast<int32_t>(index(n))));
    if (c >= memo_.size()) memo_.resize(std::max(c + 1, memo_.size() * 2));
    ClassMemo& m = memo_[c];
    if (m.generation != memo_generation_) {
      m.generation = memo_generation_;
      m.fits = feasible(n);
      if (m.fits) {
        m.score = policy_.score(state, n, req);
        m.assignment = placed_at(n, m.score);
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
    ClassIndex& index =
        indexes_[ShapeKey{req.cpu_milli, req.memory_mib, req.gpu_count, req.gpu_milli, req.allowed_models}];
    const bool normalizes = policy_.normalizes_scores();
    index.set_track_lowest(normalizes);
    index.sync(state, [&](const NodeClasses::Live& l, int64_t* score) {
      if (ruled_out_summary(l.summary)) return false;
      const NodeId n{l.first};
      if (!feasible(n)) return false;
      *score = policy_.score(state, n, req).score;
      return true;
    });
    if (const ClassIndex::Entry* top = index.best()) {
      const NodeId n{top->first};
      if (!feasible(n)) throw std::logic_error("class index: the best class no longer fits");
      d.assignment = placed_at(n, policy_.score(state, n, req));
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
  // Highest score, then lowest rank, then lowest node index.
  int64_t best_score = 0, best_rank = 0;
  auto consider = [&](NodeId n, int64_t score, const Assignment& a) {
    const int64_t r = rank(n);
    if (!d.placed() || score > best_score ||
        (score == best_score && (r < best_rank || (r == best_rank && n < d.assignment.node)))) {
      best_score = score;
      best_rank = r;
      d.assignment = a;
    }
  };
  if (!policy_.normalizes_scores() && scored == nullptr) {
    // The hot path: one pass, no allocation.
    NodeScore s;
    Assignment a;
    for (int k = 0; k < count; ++k) {
      if (ruled_out(k)) continue;
      const NodeId n = node_at(k);
      if (!assess(n, s, a)) continue;
      d.feasible_nodes += weight(k);
      consider(n, s.score, a);
    }
  } else {
    std::vector<ScoredNode>& list = scored != nullptr ? *scored : scratch_;
    const size_t first = scored != nullptr ? list.size() : 0;
    if (scored == nullptr) list.clear();
    int64_t lo = 0, hi = 0;
    NodeScore s;
    Assignment a;
    for (int k = 0; k < count; ++k) {
      if (ruled_out(k)) continue;
      const NodeId n = node_at(k);
      if (!assess(n, s, a)) continue;
      d.feasible_nodes += weight(k);
      if (list.size() == first || s.score < lo) lo = s.score;
      if (list.size() == first || s.score > hi) hi = s.score;
      list.push_back({n, s.score, a});
    }
    for (size_t k = first; k < list.size(); ++k) {
      ScoredNode& c = list[k];
      if (policy_.normalizes_scores()) c.score = hi == lo ? 0 : (c.score - lo) * 100 / (hi - lo);
      consider(c.node, c.score, c.assignment);
    }
  }
  d.score = best_score;
  if (!d.placed() && explain_failures_) d.reason = most_common_reason(state, req);
  return d;
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
