#include "sched/preemption.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace gpupack {
struct PreemptionPlanner::Candidate {
  std::vector<int> victims;  // indices into `running`
  int max_priority = 0;      // of the victims; 0 when none
  int pods = 0;
  double frag_after = 0;
  GangPlacement placement;
  auto key() const { return std::make_tuple(max_priority, pods, frag_after); }
};

void PreemptionPlanner::evict(ClusterState& state, const RunningJob& j, std::vector<NodeId>* touched) const {
  for (PodId pod : j.pods) {
    if (!state.is_bound(pod)) continue;
    if (touched) touched->push_back(state.assignment(pod).node);
    const Status st = state.unbind(pod);
    if (!st.is_ok()) throw std::logic_error("preemption: unbind failed: " + st.message);
  }
}

double PreemptionPlanner::frag_delta(const ClusterState& state, const std::vector<NodeId>& touched,
                                     const std::vector<double>& before) const {
  if (!frag_target_) return 0;
  std::vector<NodeId> nodes = touched;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  double delta = 0;
  for (NodeId n : nodes) delta += node_fragmentation_milli(*frag_target_, state, n) - before[index(n)];
  return delta;
}

// The candidate victims of one plan() call and their saved bindings, so that
// spared victims can be put back exactly.
class PreemptionPlanner::VictimSet {
 public:
  VictimSet(ClusterState& state, std::span<const RunningJob> running, std::vector<int> cands)
      : state_(state), running_(running), cands_(std::move(cands)), saved_(running.size()) {
    for (int c : cands_)
      for (PodId p : job(c).pods)
        saved_[at(c)].push_back(state.is_bound(p) ? std::make_pair(state.request(p), state.assignment(p))
                                                  : std::make_pair(Request{}, Assignment{}));
  }

  const std::vector<int>& candidates() const { return cands_; }
  const RunningJob& job(int c) const { return running_[at(c)]; }

  void restore(int c) {
    const RunningJob& j = job(c);
    for (size_t k = 0; k < j.pods.size(); ++k) {
      const auto& [req, where] = saved_[at(c)][k];
      if (!valid(where.node)) continue;
      const Status st = state_.bind(j.pods[k], req, where);
      if (!st.is_ok()) throw std::logic_error("preemption: restoring a spared victim failed: " + st.message);
    }
  }
  int pods_of(int c) const {
    int n = 0;
    for (const auto& s : saved_[at(c)]) n += valid(s.second.node);
    return n;
  }
  int64_t milli_of(int c) const {
    int64_t m = 0;
    for (const auto& s : saved_[at(c)])
      if (valid(s.second.node)) m += s.first.total_gpu_milli();
    return m;
  }
  // Nodes the job's pods held.
  void add_nodes(int c, std::vector<NodeId>& out) const {
    for (const auto& s : saved_[at(c)])
      if (valid(s.second.node)) out.push_back(s.second.node);
  }
  // Spare order: highest priority first, then fewest pods, least GPU.
  void spare_order(std::vector<int>& v) const {
    std::sort(v.begin(), v.end(), [&](int a, int b) {
      return std::make_tuple(-job(a).priority, pods_of(a), milli_of(a), job(a).job) <
             std::make_tuple(-job(b).priority, pods_of(b), milli_of(b), job(b).job);
    });
  }

 private:
  static size_t at(int c) { return static_cast<size_t>(c); }
  ClusterState& state_;
  std::span<const RunningJob> running_;
  std::vector<int> cands_;
  std::vector<std::vector<std::pair<Request, Assignment>>> saved_;
};

namespace {

// Running jobs of lower priority with at least one bound pod.
std::vector<int> lower_priority_jobs(const ClusterState& state, std::span<const RunningJob> running, int priority) {
  std::vector<int> cands;
  for (size_t i = 0; i < running.size(); ++i) {
    if (running[i].priority >= priority) continue;
    if (std::any_of(running[i].pods.begin(), running[i].pods.end(), [&](PodId p) { return state.is_bound(p); }))
      cands.push_back(static_cast<int>(i));
  }
  return cands;
}

}  // namespace

PreemptionPlanner::Candidate PreemptionPlanner::spare(ClusterState& state, VictimSet& set, std::vector<int> evicted,
                                                      const std::function<bool()>& fits) const {
  set.spare_order(evicted);
  Candidate cand;
  for (int c : evicted) {
    set.restore(c);
    if (!fits()) {
      evict(state, set.job(c), nullptr);
      cand.victims.push_back(c);
    }
  }
  for (int c : cand.victims) {
    const int p = set.job(c).priority;
    cand.max_priority = c == cand.victims.front() ? p : std::max(cand.max_priority, p);
    cand.pods += set.pods_of(c);
  }
  return cand;
}

std::optional<int> PreemptionPlanner::lowest_sufficient_level(ClusterState& state, const VictimSet& set,
                                                              const GangRequest& job,
                                                              std::span<const PodId> pods) const {
  std::vector<int> levels;
  for (int c : set.candidates()) levels.push_back(set.job(c).priority);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (int level : levels) {
    for (int c : set.candidates())
      if (set.job(c).priority == level) evict(state, set.job(c), nullptr);
    if (placer_.plan(state, pods, job).placed) return level;
  }
  return std::nullopt;
}

PreemptionPlan PreemptionPlanner::plan(ClusterState& state, std::span<const RunningJob> running, const GangRequest& job,
                                       std::span<const PodId> pods, int priority) {
  PreemptionPlan out;
  VictimSet set(state, running, lower_priority_jobs(state, running, priority));
  if (set.candidates().empty()) {
    out.reason = fmt::format("no running job has a priority below {}", priority);
    return out;
  }
  FragBaseline frag;
  if (frag_target_) frag = frag_baseline(state);
  const ClusterState::Checkpoint mark = state.checkpoint();

  // Cluster-wide: evict up to the lowest priority level that makes room, then spare.
  const std::optional<int> threshold = lowest_sufficient_level(state, set, job, pods);
  if (!threshold) {
    state.rollback(mark);
    out.reason = fmt::format("'{}' does not fit even with every lower-priority job evicted", job.name);
    return out;
  }
  std::vector<int> evicted;
  for (int c : set.candidates())
    if (set.job(c).priority <= *threshold) evicted.push_back(c);
  Candidate best = spare(state, set, evicted, [&] { return placer_.plan(state, pods, job).placed; });
  best.placement = placer_.place(state, pods, job);
  if (!best.placement.placed) throw std::logic_error("preemption: planned placement vanished");
  best.frag_after = frag_after(state, set, best, frag);
  state.rollback(mark);

  // Per node, for a one-member job: only the candidates with a pod there.
  if (job.members.size() == 1) {
    std::vector<uint8_t> single(static_cast<size_t>(state.node_count()), 0);
    for (auto& [n, victims_here] : victims_by_node(set, *threshold)) {
      single[static_cast<size_t>(n)] = 1;
      const ClusterState::Checkpoint m = state.checkpoint();
      for (int c : victims_here) evict(state, set.job(c), nullptr);
      if (placer_.plan(state, pods, job, single).placed) {
        Candidate cand = spare(state, set, victims_here, [&] { return placer_.plan(state, pods, job, single).placed; });
        if (std::make_tuple(cand.max_priority, cand.pods) <= std::make_tuple(best.max_priority, best.pods)) {
          cand.placement = placer_.place(state, pods, job, single);
          cand.frag_after = frag_after(state, set, cand, frag);
          if (cand.key() < best.key()) best = std::move(cand);
        }
      }
      single[static_cast<size_t>(n)] = 0;
      state.rollback(m);
    }
  }
  state.rollback(mark);
  return describe(best, set, job, priority);
}

std::map<int32_t, std::vector<int>> PreemptionPlanner::victims_by_node(const VictimSet& set, int threshold) const {
  std::map<int32_t, std::vector<int>> on_node;
  for (int c : set.candidates()) {
    if (set.job(c).priority > threshold) continue;
    std::vector<NodeId> nodes;
    set.add_nodes(c, nodes);
    for (NodeId n : nodes) {
      auto& v = on_node[static_cast<int32_t>(n)];
      if (v.empty() || v.back() != c) v.push_back(c);
    }
  }
  return on_node;
}

PreemptionPlanner::FragBaseline PreemptionPlanner::frag_baseline(const ClusterState& state) const {
  FragBaseline b;
  b.per_node.resize(static_cast<size_t>(state.node_count()));
  for (int i = 0; i < state.node_count(); ++i) {
    b.per_node[static_cast<size_t>(i)] = node_fragmentation_milli(*frag_target_, state, NodeId{i});
    b.cluster += b.per_node[static_cast<size_t>(i)];
  }
  return b;
}

double PreemptionPlanner::frag_after(const ClusterState& state, const VictimSet& set, const Candidate& cand,
                                     const FragBaseline& before) const {
  std::vector<NodeId> touched;
  for (int c : cand.victims) set.add_nodes(c, touched);
  for (const Assignment& a : cand.placement.assignments)
    if (valid(a.node)) touched.push_back(a.node);
  return before.cluster + frag_delta(state, touched, before.per_node);
}

PreemptionPlan PreemptionPlanner::describe(const Candidate& best, const VictimSet& set, const GangRequest& job,
                                           int priority) const {
  PreemptionPlan out;
  out.feasible = true;
  out.max_victim_priority = best.max_priority;
  out.victim_pods = best.pods;
  out.frag_after_milli = best.frag_after;
  out.placement = best.placement;
  for (int c : best.victims) {
    const RunningJob& j = set.job(c);
    const int pods = set.pods_of(c);
    out.victims.push_back({j.job, j.priority, pods,
                           fmt::format("priority {} < {}: evicted whole ({} pod{}) to make room for '{}'", j.priority,
                                       priority, pods, pods == 1 ? "" : "s", job.name)});
  }
  out.reason =
      out.victims.empty()
          ? fmt::format("'{}' fits without evictions", job.name)
          : fmt::format("'{}' (priority {}) fits after evicting {} job(s), {} pod(s), highest victim priority {}",
                        job.name, priority, out.victims.size(), out.victim_pods, out.max_victim_priority);
  return out;
}

}  // namespace gpupack
