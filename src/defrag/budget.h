// Defrag budget: what a plan may disturb, and what each move costs.
//
// Contract:
// - `PodMoveInfo` is per-pod move metadata that ClusterState does not hold
//   (labels/annotations in Kubernetes): name, namespace, immovable,
//   checkpointable, restart cost and disruption group. Callers keep a
//   `PodMoveInfos` vector indexed by PodId; `move_info()` returns defaults for
//   ids past its end (movable, not checkpointable, restart cost 1, no group).
// - A move's cost: `restart_cost` when the pod must restart (eviction, or a
//   GPU remap of a pod that cannot be checkpointed), `restart_cost x
//   kCheckpointCostFactor` when it is checkpointed and restored. Admitting a
//   pending pod costs nothing.
// - `DefragBudget` limits a whole plan: moves (each step that moves a running
//   pod counts once), GPU milli moved, summed cost, and per disruption group
//   the number of distinct pods moved (PodDisruptionBudget max-unavailable:
//   a plan runs as one batch, so every pod it moves counts as unavailable).
//   Negative limits mean unlimited.
// - `BudgetUse` accumulates a plan's use; `fits()` is O(group limits).
// Plain values, no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/request.h"

namespace gpupack {

enum class MoveKind {
  kRemap,    // same node, other GPUs
  kMigrate,  // another node, by checkpoint/restore
  kEvict,    // another node, killed and rescheduled
  kAdmit,    // a pending pod placed (not a move)
  kLand,     // a parked pod placed at its target (not a move; see PlanStep::parked)
};
const char* move_kind_name(MoveKind k);
// True for the kinds that move a running pod (remap, migrate, evict).
inline bool is_move(MoveKind k) { return k != MoveKind::kAdmit && k != MoveKind::kLand; }

struct PodMoveInfo {
  std::string name;  // empty: "pod-<id>"
  std::string ns = "default";
  bool immovable = false;
  bool checkpointable = false;
  double restart_cost = 1.0;
  std::string group;  // disruption group; empty = none
};
using PodMoveInfos = std::vector<PodMoveInfo>;

const PodMoveInfo& move_info(const PodMoveInfos& infos, PodId pod);
std::string pod_display_name(const PodMoveInfos& infos, PodId pod);

constexpr double kCheckpointCostFactor = 0.25;

// Kind of moving a pod from `from` to `to` (both on valid nodes).
MoveKind classify_move(const PodMoveInfo& info, NodeId from, NodeId to);
double move_cost(const PodMoveInfo& info, MoveKind kind);

struct DefragBudget {
  int max_moves = -1;
  int64_t max_moved_gpu_milli = -1;
  double max_cost = -1;
  std::map<std::string, int> max_unavailable;  // group -> distinct pods moved

  bool unlimited() const { return max_moves < 0 && max_moved_gpu_milli < 0 && max_cost < 0; }
};

struct BudgetUse {
  int moves = 0;
  int64_t moved_gpu_milli = 0;
  double cost = 0;
  std::map<std::string, std::vector<PodId>> moved_by_group;  // distinct pods

  // Adds one move of `pod` (gpu milli `milli`, cost `cost`).
  void add(PodId pod, const PodMoveInfo& info, int64_t milli, double cost);
  // Would the use stay within `budget`?
  bool within(const DefragBudget& budget) const;
};

// What `budget` leaves once `use` is spent (unlimited stays unlimited; a
// group's limit drops by the distinct pods `use` moved in it).
DefragBudget remaining_budget(const DefragBudget& budget, const BudgetUse& use);

}  // namespace gpupack
