#include "policy/whole_node_reserve.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace gpupack {
namespace {

using Shape = std::tuple<int32_t, int64_t, int64_t>;  // GPUs, CPU, memory

bool dominates(const Shape& a, const Shape& b) {  // a >= b everywhere, > somewhere
  return std::get<0>(a) >= std::get<0>(b) && std::get<1>(a) >= std::get<1>(b) && std::get<2>(a) >= std::get<2>(b) &&
         a != b;
}

}  // namespace

WholeNodeReserve::WholeNodeReserve(const TargetWorkload& target) {
  classes_ = target.all_classes();
  for (const TargetClass& c : classes_)
    workload_gpu_milli_ += static_cast<double>(c.count) * c.gpu_count * std::min(c.gpu_milli, kGpuMilliPerGpu);
}

void WholeNodeReserve::build(const ClusterState& state) {
  state_ = nullptr;  // the counts are recounted from the new groups
  node_count_ = state.node_count();
  stamp_ = state.tie_order_stamp();
  member_.assign(static_cast<size_t>(node_count_), 0);
  for (Group& g : groups_) g = Group{};
  if (workload_gpu_milli_ <= 0) return;

  std::set<Shape> shapes;
  int32_t most_gpus = 0;
  for (int n = 0; n < node_count_; ++n) {
    const NodeId id{n};
    if (state.gpu_count(id) == 0) continue;
    shapes.emplace(state.gpu_count(id), state.cpu_total_milli(id), state.memory_total_mib(id));
    most_gpus = std::max(most_gpus, state.gpu_count(id));
  }
  std::set<Shape> maximal;
  for (const Shape& s : shapes)
    if (std::none_of(shapes.begin(), shapes.end(), [&](const Shape& t) { return dominates(t, s); })) maximal.insert(s);
  const bool maximal_group = maximal.size() < shapes.size();

  double largest_pods = 0, maximal_pods = 0;
  std::set<Shape> maximal_hosts;  // the maximal shapes that host a pod of the maximal group
  for (const TargetClass& c : classes_) {
    if (c.gpu_count <= 0 || c.count <= 0) continue;
    if (most_gpus >= 2 && c.gpu_count == most_gpus) largest_pods += static_cast<double>(c.count);
    if (!maximal_group) continue;
    std::vector<Shape> hosts;
    bool only_maximal = true;
    for (const Shape& s : shapes) {
      if (std::get<0>(s) < c.gpu_count || std::get<1>(s) < c.cpu_milli) continue;
      hosts.push_back(s);
      only_maximal = only_maximal && maximal.count(s) > 0;
    }
    if (hosts.empty() || !only_maximal) continue;
    maximal_pods += static_cast<double>(c.count);
    maximal_hosts.insert(hosts.begin(), hosts.end());
  }
  groups_[0].pods_per_milli = largest_pods / workload_gpu_milli_;
  groups_[1].pods_per_milli = maximal_pods / workload_gpu_milli_;
  for (int n = 0; n < node_count_; ++n) {
    const NodeId id{n};
    if (state.gpu_count(id) == 0) continue;
    const Shape s{state.gpu_count(id), state.cpu_total_milli(id), state.memory_total_mib(id)};
    if (largest_pods > 0 && state.gpu_count(id) == most_gpus) {
      groups_[0].nodes.push_back(n);
      member_[static_cast<size_t>(n)] |= 1;
    }
    if (maximal_pods > 0 && maximal_hosts.count(s) > 0) {
      groups_[1].nodes.push_back(n);
      member_[static_cast<size_t>(n)] |= 2;
    }
  }
}

bool WholeNodeReserve::update(const ClusterState& state) {
  if (node_count_ != state.node_count() || stamp_ != state.tie_order_stamp()) build(state);
  const double free_milli = static_cast<double>(state.gpu_capacity_milli() - state.gpu_used_milli());
  flipped_ = 0;
  if (groups_[0].nodes.empty() && groups_[1].nodes.empty()) return false;
  count_free_nodes(state);
  for (int i = 0; i < 2; ++i) {
    Group& g = groups_[i];
    if (g.nodes.empty()) continue;
    g.expected = g.pods_per_milli * free_milli;
    g.reserve = g.expected + kSafetyStdDevs * std::sqrt(g.expected);
    const bool holding = static_cast<double>(g.free_nodes) <= g.reserve;
    if (holding != g.holding) flipped_ |= static_cast<uint8_t>(1u << i);
    g.holding = holding;
  }
  return flipped_ != 0;
}

void WholeNodeReserve::recount_class(const ClusterState& state, int32_t c) {
  const NodeClasses& classes = state.node_classes();
  Counted& was = counted_[static_cast<size_t>(c)];
  for (int g = 0; g < 2; ++g)
    if (was.groups & (1u << g)) groups_[g].free_nodes -= was.nodes;
  was = Counted{};
  if (!classes.alive(c)) return;
  const NodeClasses::Live& live = classes.live_of(c);
  const uint8_t groups = member_[static_cast<size_t>(live.first)];
  if (groups == 0 || !state.fully_free(NodeId{live.first})) return;
  was = Counted{live.size, groups};
  for (int g = 0; g < 2; ++g)
    if (groups & (1u << g)) groups_[g].free_nodes += live.size;
}

void WholeNodeReserve::count_free_nodes(const ClusterState& state) {
  const NodeClasses& classes = state.node_classes();
  const bool same_history = state_ == &state && log_id_ == classes.log_id() && classes.log_holds(cursor_);
  if (counted_.size() < classes.slots()) counted_.resize(classes.slots());
  if (same_history) {
    for (uint64_t i = cursor_; i < classes.log_end(); ++i) recount_class(state, classes.logged(i));
  } else {
    state_ = &state;
    log_id_ = classes.log_id();
    counted_.assign(classes.slots(), Counted{});
    for (Group& g : groups_) g.free_nodes = 0;
    for (const NodeClasses::Live& l : classes.live()) recount_class(state, l.id);
  }
  cursor_ = classes.log_end();
}

bool WholeNodeReserve::reserved(const ClusterState& state, NodeId node) const {
  const size_t i = index(node);
  if (i >= member_.size() || member_[i] == 0) return false;
  const bool held = ((member_[i] & 1) && groups_[0].holding) || ((member_[i] & 2) && groups_[1].holding);
  return held && state.fully_free(node);
}

}  // namespace gpupack
