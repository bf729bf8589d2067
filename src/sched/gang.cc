#include "sched/gang.h"

#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "sched/filter.h"

namespace gpupack {

int64_t GangRequest::total_gpu_milli() const {
  int64_t total = 0;
  for (const Request& r : members) total += r.total_gpu_milli();
  return total;
}

GangPlacer::GangPlacer(Scheduler& scheduler, int node_count, std::vector<TopologyLevel> levels,
                       const TargetWorkload* frag_target)
    : scheduler_(scheduler), node_count_(node_count), levels_(std::move(levels)), frag_target_(frag_target) {
  for (const TopologyLevel& level : levels_) {
    if (level.domain_of_node.size() != static_cast<size_t>(node_count))
      throw std::invalid_argument("topology level '" + level.name + "' does not name a domain for every node");
    Domains d;
    std::map<std::string, size_t> slot;
    for (int i = 0; i < node_count; ++i) {
      const std::string& name = level.domain_of_node[static_cast<size_t>(i)];
      if (name.empty()) continue;
      auto [it, inserted] = slot.emplace(name, d.names.size());
      if (inserted) {
        d.names.push_back(name);
        d.nodes.emplace_back();
      }
      d.nodes[it->second].push_back(NodeId{i});
    }
    domains_.push_back(std::move(d));
  }
}

bool GangPlacer::node_can_hold_all(const ClusterState& state, NodeId n, const GangRequest& gang) const {
  int64_t cpu = 0, mem = 0, whole = 0, shared_milli = 0;
  for (const Request& r : gang.members) {
    if (!fits(state, n, r)) return false;
    cpu += r.cpu_milli;
    mem += r.memory_mib;
    if (r.gpu_count > 0 && !r.is_shared()) whole += r.gpu_count;
    if (r.is_shared()) shared_milli += r.total_gpu_milli();
  }
  if (cpu > state.cpu_free_milli(n) || mem > state.memory_free_mib(n)) return false;
  const int free_gpus = count_gpus_with_free(state.gpu_free_milli(n), kGpuMilliPerGpu);
  if (whole > free_gpus) return false;
  return whole * kGpuMilliPerGpu + shared_milli <= state.gpu_free_total_milli(n);
}

int GangPlacer::greedy(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                       bool stop_at_first_failure, std::vector<Assignment>& out, Dimension& reason) {
  scheduler_.set_node_mask(mask_);
  int placed = 0;
  out.assign(gang.members.size(), Assignment{});
  for (size_t i = 0; i < gang.members.size(); ++i) {
    const Decision d = scheduler_.schedule(state, pods[i], gang.members[i]);
    if (d.placed()) {
      out[i] = d.assignment;
      ++placed;
    } else {
      if (reason == Dimension::kNone) reason = d.reason;
      if (stop_at_first_failure) break;
    }
  }
  scheduler_.set_node_mask({});
  return placed;
}

double GangPlacer::domain_cost(const ClusterState& state, const std::vector<NodeId>& nodes) const {
  double cost = 0;
  for (NodeId n : nodes) {
    cost += frag_target_ ? node_fragmentation_milli(*frag_target_, state, n)
                         : static_cast<double>(state.gpu_free_total_milli(n));
  }
  return cost;
}

GangPlacement GangPlacer::place(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                                std::span<const uint8_t> base_mask) {
  if (pods.size() != gang.members.size())
    throw std::invalid_argument("gang '" + gang.name + "': one pod id per member is needed");
  if (!base_mask.empty() && base_mask.size() != static_cast<size_t>(node_count_))
    throw std::invalid_argument("gang placement: base mask does not cover every node");
  if (gang.members.empty()) {
    GangPlacement out;
    out.placed = true;
    out.level = "node";
    return out;
  }
  if (gang.members.size() == 1) return place_single(state, pods, gang, base_mask);
  // Narrowest domain first: one node, then each topology level, then the cluster.
  if (auto out = place_on_one_node(state, pods, gang, base_mask)) return *out;
  for (size_t l = 0; l < levels_.size(); ++l)
    if (auto out = place_in_level(state, pods, gang, base_mask, l)) return *out;
  return place_cluster_wide(state, pods, gang, base_mask);
}

GangPlacement GangPlacer::place_single(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                                       std::span<const uint8_t> base_mask) {
  // One Scheduler decision.
  GangPlacement out;
  std::vector<Assignment> trial;
  mask_.assign(base_mask.begin(), base_mask.end());
  const int placed = greedy(state, pods, gang, true, trial, out.reason);
  out.assignments = trial;
  out.placed_members = placed;
  out.placed = placed == 1;
  if (out.placed) {
    out.level = "node";
    out.domain = std::string(state.node_name(trial[0].node));
  }
  return out;
}

std::optional<GangPlacement> GangPlacer::place_on_one_node(ClusterState& state, std::span<const PodId> pods,
                                                           const GangRequest& gang,
                                                           std::span<const uint8_t> base_mask) {
  // The policy's pick for the first member among the nodes that can hold
  // every member, a few tries at most.
  const int n_members = static_cast<int>(gang.members.size());
  const ClusterState::Checkpoint start = state.checkpoint();
  std::vector<uint8_t> candidate_mask(static_cast<size_t>(node_count_), 0);
  int candidates = 0;
  for (int i = 0; i < node_count_; ++i) {
    if (allowed_by(base_mask, i) && node_can_hold_all(state, NodeId{i}, gang)) {
      candidate_mask[static_cast<size_t>(i)] = 1;
      ++candidates;
    }
  }
  std::vector<Assignment> trial;
  for (int attempt = 0; attempt < 4 && candidates > 0; ++attempt) {
    scheduler_.set_node_mask(candidate_mask);
    const Decision first = scheduler_.decide(state, gang.members[0]);
    scheduler_.set_node_mask({});
    if (!first.placed()) break;
    const NodeId n = first.assignment.node;
    mask_.assign(static_cast<size_t>(node_count_), 0);
    mask_[index(n)] = 1;
    Dimension ignored = Dimension::kNone;
    if (greedy(state, pods, gang, true, trial, ignored) == n_members) {
      GangPlacement out;
      out.placed = true;
      out.placed_members = n_members;
      out.assignments = trial;
      out.level = "node";
      out.domain = std::string(state.node_name(n));
      return out;
    }
    state.rollback(start);
    candidate_mask[index(n)] = 0;
    --candidates;
  }
  return std::nullopt;
}

std::optional<GangPlacement> GangPlacer::place_in_level(ClusterState& state, std::span<const PodId> pods,
                                                        const GangRequest& gang, std::span<const uint8_t> base_mask,
                                                        size_t level) {
  // Every domain of the level is tried; the one whose placement costs least wins.
  const int n_members = static_cast<int>(gang.members.size());
  const ClusterState::Checkpoint start = state.checkpoint();
  const Domains& doms = domains_[level];
  double best_cost = std::numeric_limits<double>::infinity();
  size_t best = doms.names.size();
  std::vector<Assignment> trial, best_assign;
  for (size_t d = 0; d < doms.names.size(); ++d) {
    mask_.assign(static_cast<size_t>(node_count_), 0);
    int64_t free_gpu = 0;
    for (NodeId n : doms.nodes[d]) {
      if (!allowed_by(base_mask, static_cast<int>(index(n)))) continue;
      mask_[index(n)] = 1;
      free_gpu += state.gpu_free_total_milli(n);
    }
    if (free_gpu < gang.total_gpu_milli()) continue;
    const double before = frag_target_ ? domain_cost(state, doms.nodes[d]) : 0.0;
    Dimension ignored = Dimension::kNone;
    if (greedy(state, pods, gang, true, trial, ignored) == n_members) {
      const double cost = domain_cost(state, doms.nodes[d]) - before;
      if (cost < best_cost) {
        best_cost = cost;
        best = d;
        best_assign = trial;
      }
    }
    state.rollback(start);
  }
  if (best == doms.names.size()) return std::nullopt;
  for (int i = 0; i < n_members; ++i) {
    const Status st = state.bind(pods[static_cast<size_t>(i)], gang.members[static_cast<size_t>(i)],
                                 best_assign[static_cast<size_t>(i)]);
    if (!st.is_ok()) throw std::logic_error("gang replay failed: " + st.message);
  }
  GangPlacement out;
  out.placed = true;
  out.placed_members = n_members;
  out.assignments = std::move(best_assign);
  out.level = levels_[level].name;
  out.domain = doms.names[best];
  return out;
}

GangPlacement GangPlacer::place_cluster_wide(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                                             std::span<const uint8_t> base_mask) {
  // As many members as fit anywhere, at least min_member, or nothing.
  GangPlacement out;
  const ClusterState::Checkpoint start = state.checkpoint();
  std::vector<Assignment> trial;
  mask_.assign(base_mask.begin(), base_mask.end());
  const int placed = greedy(state, pods, gang, false, trial, out.reason);
  if (placed >= gang.required()) {
    out.placed = true;
    out.placed_members = placed;
    out.assignments = trial;
    out.level = "cluster";
    out.reason = Dimension::kNone;
    return out;
  }
  state.rollback(start);
  if (out.reason == Dimension::kNone) out.reason = Dimension::kGpuMilli;
  out.assignments.assign(gang.members.size(), Assignment{});
  return out;
}

GangPlacement GangPlacer::plan(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                               std::span<const uint8_t> base_mask) {
  const ClusterState::Checkpoint mark = state.checkpoint();
  GangPlacement p = place(state, pods, gang, base_mask);
  state.rollback(mark);
  return p;
}

}  // namespace gpupack
