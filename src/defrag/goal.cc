#include "defrag/goal.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpupack {

const char* goal_kind_name(GoalKind k) {
  switch (k) {
    case GoalKind::kAdmitPending:
      return "admit";
    case GoalKind::kFreeGpus:
      return "free-gpus";
    case GoalKind::kFreeNodes:
      return "free-nodes";
    case GoalKind::kFragBelow:
      return "frag";
  }
  return "?";
}

GoalKind parse_goal_kind(const std::string& name) {
  for (GoalKind k : {GoalKind::kAdmitPending, GoalKind::kFreeGpus, GoalKind::kFreeNodes, GoalKind::kFragBelow})
    if (name == goal_kind_name(k)) return k;
  throw std::invalid_argument(
      fmt::format("unknown defrag goal '{}' (known: admit, free-gpus, free-nodes, frag)", name));
}

MeasureTracker::MeasureTracker(const ClusterState& state, const TargetWorkload* target)
    : target_(target), nodes_(state.node_count()) {
  for (int n = 0; n < state.node_count(); ++n) {
    nodes_[n] = compute(state, NodeId{n});
    free_gpus_ += nodes_[n].free_gpus;
    free_nodes_ += nodes_[n].free_node;
    frag_milli_ += nodes_[n].frag_milli;
  }
}

MeasureTracker::NodeMeasure MeasureTracker::compute(const ClusterState& s, NodeId n) const {
  NodeMeasure m;
  m.version = s.version(n);
  for (int32_t f : s.gpu_free_milli(n)) m.free_gpus += f == kGpuMilliPerGpu;
  m.free_node = s.gpu_count(n) > 0 && s.fully_free(n);
  if (target_) m.frag_milli = node_fragmentation_milli(*target_, s, n);
  return m;
}

void MeasureTracker::refresh(const ClusterState& s, NodeId n) {
  NodeMeasure& old = nodes_[index(n)];
  if (old.version == s.version(n)) return;
  const NodeMeasure m = compute(s, n);
  free_gpus_ += m.free_gpus - old.free_gpus;
  free_nodes_ += static_cast<int>(m.free_node) - static_cast<int>(old.free_node);
  frag_milli_ += m.frag_milli - old.frag_milli;
  old = m;
}

void MeasureTracker::refresh_all(const ClusterState& s) {
  for (int n = 0; n < s.node_count(); ++n) refresh(s, NodeId{n});
}

ClusterMeasures MeasureTracker::measures(const ClusterState& s) const {
  ClusterMeasures c;
  c.used_gpu_milli = s.gpu_used_milli();
  c.free_gpus = free_gpus_;
  c.free_nodes = free_nodes_;
  c.frag_milli = frag_milli_;
  return c;
}

ClusterMeasures measure_cluster(const ClusterState& state, const TargetWorkload* target) {
  return MeasureTracker(state, target).measures(state);
}

}  // namespace gpupack
