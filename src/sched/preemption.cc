#include "sched/preemption.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace gpupack {
namespace {

struct Candidate {
  std::vector<int> victims;  // indices into `running`
  int max_priority = 0;
  int pods = 0;
  double frag_after = 0;
  GangPlacement placement;
  auto key() const { return std::make_tuple(max_priority, pods, frag_after); }
};

}  // namespace

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

PreemptionPlan PreemptionPlanner::plan(ClusterState& state, std::span<const RunningJob> running,
                                       const GangRequest& job, std::span<const PodId> pods, int priority) {
  PreemptionPlan out;
  std::vector<int> cands;
  for (size_t i = 0; i < running.size(); ++i) {
    if (running[i].priority >= priority) continue;
    for (PodId p : running[i].pods)
      if (state.is_bound(p)) {
        cands.push_back(static_cast<int>(i));
        break;
      }
  }
  if (cands.empty()) {
    out.reason = fmt::format("no running job has a priority below {}", priority);
    return out;
  }
  // Saved bindings, to put spared victims back.
  std::vector<std::vector<std::pair<Request, Assignment>>> saved(running.size());
  for (int c : cands)
    for (PodId p : running[static_cast<size_t>(c)].pods)
      saved[static_cast<size_t>(c)].push_back(
          state.is_bound(p) ? std::make_pair(state.request(p), state.assignment(p)) : std::make_pair(Request{}, Assignment{}));
  auto restore = [&](int c) {
    const RunningJob& j = running[static_cast<size_t>(c)];
    for (size_t k = 0; k < j.pods.size(); ++k) {
      const auto& [req, where] = saved[static_cast<size_t>(c)][k];
      if (!valid(where.node)) continue;
      const Status st = state.bind(j.pods[k], req, where);
      if (!st.is_ok()) throw std::logic_error("preemption: restoring a spared victim failed: " + st.message);
    }
  };
  auto pods_of = [&](int c) {
    int n = 0;
    for (const auto& s : saved[static_cast<size_t>(c)]) n += valid(s.second.node);
    return n;
  };
  auto milli_of = [&](int c) {
    int64_t m = 0;
    for (const auto& s : saved[static_cast<size_t>(c)])
      if (valid(s.second.node)) m += s.first.total_gpu_milli();
    return m;
  };
  // Spare order: highest priority first, then fewest pods, least GPU.
  auto spare_order = [&](std::vector<int>& v) {
    std::sort(v.begin(), v.end(), [&](int a, int b) {
      const RunningJob &ja = running[static_cast<size_t>(a)], &jb = running[static_cast<size_t>(b)];
      return std::make_tuple(-ja.priority, pods_of(a), milli_of(a), ja.job) <
             std::make_tuple(-jb.priority, pods_of(b), milli_of(b), jb.job);
    });
  };

  std::vector<double> before;
  double cluster_before = 0;
  if (frag_target_) {
    before.resize(static_cast<size_t>(state.node_count()));
    for (int i = 0; i < state.node_count(); ++i) {
      before[static_cast<size_t>(i)] = node_fragmentation_milli(*frag_target_, state, NodeId{i});
      cluster_before += before[static_cast<size_t>(i)];
    }
  }

  std::optional<Candidate> best;
  const ClusterState::Checkpoint mark = state.checkpoint();

  // Cluster-wide: lowest priority level that makes room, then spare.
  std::vector<int> levels;
  for (int c : cands) levels.push_back(running[static_cast<size_t>(c)].priority);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  std::optional<int> threshold;
  for (int level : levels) {
    for (int c : cands)
      if (running[static_cast<size_t>(c)].priority == level) evict(state, running[static_cast<size_t>(c)], nullptr);
    if (placer_.plan(state, pods, job).placed) {
      threshold = level;
      break;
    }
  }
  if (!threshold) {
    state.rollback(mark);
    out.reason = fmt::format("'{}' does not fit even with every lower-priority job evicted", job.name);
    return out;
  }
  {
    std::vector<int> evicted;
    for (int c : cands)
      if (running[static_cast<size_t>(c)].priority <= *threshold) evicted.push_back(c);
    spare_order(evicted);
    Candidate cand;
    for (int c : evicted) {
      restore(c);
      if (!placer_.plan(state, pods, job).placed) {
        evict(state, running[static_cast<size_t>(c)], nullptr);
        cand.victims.push_back(c);
      }
    }
    cand.placement = placer_.place(state, pods, job);
    if (!cand.placement.placed) throw std::logic_error("preemption: planned placement vanished");
    std::vector<NodeId> touched;
    for (int c : cand.victims) {
      cand.max_priority = std::max(cand.max_priority, running[static_cast<size_t>(c)].priority);
      cand.pods += pods_of(c);
      for (const auto& s : saved[static_cast<size_t>(c)])
        if (valid(s.second.node)) touched.push_back(s.second.node);
    }
    if (!cand.victims.empty()) {
      cand.max_priority = running[static_cast<size_t>(cand.victims.front())].priority;
      for (int c : cand.victims) cand.max_priority = std::max(cand.max_priority, running[static_cast<size_t>(c)].priority);
    }
    for (const Assignment& a : cand.placement.assignments)
      if (valid(a.node)) touched.push_back(a.node);
    cand.frag_after = cluster_before + frag_delta(state, touched, before);
    best = std::move(cand);
    state.rollback(mark);
  }

  // Per node, for a one-member job: only the candidates with a pod there.
  if (job.members.size() == 1) {
    std::map<int32_t, std::vector<int>> on_node;
    for (int c : cands) {
      if (running[static_cast<size_t>(c)].priority > *threshold) continue;
      int32_t last = -1;
      for (const auto& s : saved[static_cast<size_t>(c)]) {
        if (!valid(s.second.node)) continue;
        const int32_t n = static_cast<int32_t>(s.second.node);
        auto& v = on_node[n];
        if (n != last && (v.empty() || v.back() != c)) v.push_back(c);
        last = n;
      }
    }
    std::vector<uint8_t> single(static_cast<size_t>(state.node_count()), 0);
    for (auto& [n, victims_here] : on_node) {
      const ClusterState::Checkpoint m = state.checkpoint();
      for (int c : victims_here) evict(state, running[static_cast<size_t>(c)], nullptr);
      single[static_cast<size_t>(n)] = 1;
      if (placer_.plan(state, pods, job, single).placed) {
        spare_order(victims_here);
        Candidate cand;
        for (int c : victims_here) {
          restore(c);
          if (!placer_.plan(state, pods, job, single).placed) {
            evict(state, running[static_cast<size_t>(c)], nullptr);
            cand.victims.push_back(c);
          }
        }
        for (int c : cand.victims) {
          cand.max_priority = std::max(cand.max_priority, running[static_cast<size_t>(c)].priority);
          cand.pods += pods_of(c);
        }
        if (!cand.victims.empty()) {
          cand.max_priority = running[static_cast<size_t>(cand.victims.front())].priority;
          for (int c : cand.victims)
            cand.max_priority = std::max(cand.max_priority, running[static_cast<size_t>(c)].priority);
        }
        const bool can_win = std::make_tuple(cand.max_priority, cand.pods) <=
                             std::make_tuple(best->max_priority, best->pods);
        if (can_win) {
          cand.placement = placer_.place(state, pods, job, single);
          std::vector<NodeId> touched;
          for (int c : cand.victims)
            for (const auto& s : saved[static_cast<size_t>(c)])
              if (valid(s.second.node)) touched.push_back(s.second.node);
          touched.push_back(NodeId{n});
          cand.frag_after = cluster_before + frag_delta(state, touched, before);
          if (cand.key() < best->key()) best = std::move(cand);
        }
      }
      single[static_cast<size_t>(n)] = 0;
      state.rollback(m);
    }
  }
  state.rollback(mark);

  out.feasible = true;
  out.max_victim_priority = best->max_priority;
  out.victim_pods = best->pods;
  out.frag_after_milli = best->frag_after;
  out.placement = best->placement;
  for (int c : best->victims) {
    const RunningJob& j = running[static_cast<size_t>(c)];
    out.victims.push_back({j.job, j.priority, pods_of(c),
                           fmt::format("priority {} < {}: evicted whole ({} pod{}) to make room for '{}'", j.priority,
                                       priority, pods_of(c), pods_of(c) == 1 ? "" : "s", job.name)});
  }
  out.reason = out.victims.empty()
                   ? fmt::format("'{}' fits without evictions", job.name)
                   : fmt::format("'{}' (priority {}) fits after evicting {} job(s), {} pod(s), highest victim priority {}",
                                 job.name, priority, out.victims.size(), out.victim_pods, out.max_victim_priority);
  return out;
}

}  // namespace gpupack
