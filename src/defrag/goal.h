// Defrag goals and the cluster measures a plan is judged by.
//
// Contract:
// - `DefragGoal` says what a plan aims at: admit pending pods (optionally as
//   a gang: all or none), maximise whole free GPUs, maximise whole free nodes,
//   or bring the cluster's FGD fragmentation below `frag_threshold_pct` % of
//   GPU capacity (needs `target`). Pending pods carry PodIds that are not
//   bound in the state they are planned for.
// - `ClusterMeasures` are computed from a ClusterState: used GPU milli, whole
//   free GPUs (free milli 1000), free nodes (GPU nodes with nothing bound:
//   every GPU, CPU and memory free) and, when a target is given, FGD
//   fragmentation. `MeasureTracker` keeps them incrementally, refreshing
//   only nodes whose version changed (O(GPUs + classes x GPUs) per node).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "model/cluster_state.h"

namespace gpupack {

enum class GoalKind { kAdmitPending, kFreeGpus, kFreeNodes, kFragBelow };
const char* goal_kind_name(GoalKind k);
// "admit", "free-gpus", "free-nodes", "frag"; throws std::invalid_argument.
GoalKind parse_goal_kind(const std::string& name);

struct PendingPod {
  PodId id{};
  Request request;
};

struct DefragGoal {
  GoalKind kind = GoalKind::kAdmitPending;
  std::vector<PendingPod> pending;               // kAdmitPending
  bool gang = false;                             // admit all pending pods or none
  double frag_threshold_pct = 0;                 // kFragBelow
  std::shared_ptr<const TargetWorkload> target;  // FGD measure (kFragBelow; optional otherwise)
};

struct ClusterMeasures {
  int64_t used_gpu_milli = 0;
  int free_gpus = 0;
  int free_nodes = 0;
  double frag_milli = 0;  // 0 without a target
  int admitted_pods = 0;
  int64_t admitted_gpu_milli = 0;

  friend bool operator==(const ClusterMeasures&, const ClusterMeasures&) = default;
};

ClusterMeasures measure_cluster(const ClusterState& state, const TargetWorkload* target);

class MeasureTracker {
 public:
  MeasureTracker(const ClusterState& state, const TargetWorkload* target);
  void refresh(const ClusterState& state, NodeId node);
  // Refreshes every node whose version changed. O(nodes).
  void refresh_all(const ClusterState& state);
  ClusterMeasures measures(const ClusterState& state) const;

 private:
  struct NodeMeasure {
    uint64_t version = 0;
    int free_gpus = 0;
    bool free_node = false;
    double frag_milli = 0;
  };
  NodeMeasure compute(const ClusterState& state, NodeId node) const;

  const TargetWorkload* target_;
  std::vector<NodeMeasure> nodes_;
  int free_gpus_ = 0;
  int free_nodes_ = 0;
  double frag_milli_ = 0;
};

}  // namespace gpupack
