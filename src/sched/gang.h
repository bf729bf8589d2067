// Gang placement: all-or-nothing binding of a pod group.
//
// Contract:
// - A `GangRequest` is a named pod group: one Request per member and a
//   `min_member` (0 = every member). place() binds at least min_member of the
//   members or nothing: it works inside a ClusterState checkpoint and rolls
//   back every bind of a failed attempt, so no gang is ever partly bound below
//   min_member (the "reserve/unreserve" of kube's coscheduling, done on the
//   state's undo log). Callers' own checkpoints nest around it.
// - Domain preference: first one node holding every member, then one domain
//   of each `TopologyLevel` in the order given (e.g. rack, then switch),
//   then the whole cluster. Inside a domain each member is placed by the
//   Scheduler (the active policy). Among the nodes (resp. domains) of a level
//   that can hold the whole gang, the one chosen is the policy's pick for the
//   first member (node level) or the domain whose placement adds the least
//   FGD fragmentation (with a target workload) or else leaves the least free
//   GPU milli in the domain (tightest); ties to the lowest index. Only the
//   cluster level may place fewer than every member (but >= min_member).
// - `TopologyLevel::domain_of_node[i]` names node i's domain at that level
//   ("" = none); it is an input (from node labels, a CSV column or a
//   generator), not part of ClusterState.
// - Cost: O(levels x domains x members x nodes) filter checks per gang;
//   a one-member gang is a single Scheduler decision. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "model/cluster_state.h"
#include "sched/scheduler.h"

namespace gpupack {

struct GangRequest {
  std::string name;
  std::vector<Request> members;  // one per pod
  int min_member = 0;            // 0 = all members

  int required() const {
    const int n = static_cast<int>(members.size());
    return min_member <= 0 || min_member > n ? n : min_member;
  }
  int64_t total_gpu_milli() const;
};

struct TopologyLevel {
  std::string name;                         // e.g. "rack", "switch"
  std::vector<std::string> domain_of_node;  // one per node; "" = none
};

struct GangPlacement {
  bool placed = false;
  std::vector<Assignment> assignments;  // one per member; node kNoNode = not placed
  int placed_members = 0;
  std::string level;                    // "node", a TopologyLevel name, or "cluster"
  std::string domain;                   // the node's or domain's name ("" at cluster level)
  Dimension reason = Dimension::kNone;  // set when not placed
};

// A gang (or single pod) that holds resources now; used by backfill and
// preemption. `expected_end_s` is start + runtime estimate, kNoEstimate when
// the job gave none.
constexpr int64_t kNoEstimate = INT64_MAX;
struct RunningJob {
  int32_t job = 0;
  int priority = 0;
  int64_t expected_end_s = kNoEstimate;
  std::vector<PodId> pods;
};

class GangPlacer {
 public:
  // `frag_target` (optional, must outlive the placer) ranks domains by FGD.
  GangPlacer(Scheduler& scheduler, int node_count, std::vector<TopologyLevel> levels = {},
             const TargetWorkload* frag_target = nullptr);

  // Binds pods[i] for gang.members[i] (at least gang.required() of them) or
  // nothing. `base_mask` (empty = all nodes) restricts the nodes usable.
  GangPlacement place(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                      std::span<const uint8_t> base_mask = {});
  // The same search; leaves the state as it found it.
  GangPlacement plan(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                     std::span<const uint8_t> base_mask = {});

  Scheduler& scheduler() { return scheduler_; }
  const std::vector<TopologyLevel>& levels() const { return levels_; }

 private:
  struct Domains {
    std::vector<std::string> names;
    std::vector<std::vector<NodeId>> nodes;
  };
  // Places members greedily on the nodes allowed by mask_; returns how many.
  int greedy(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang, bool stop_at_first_failure,
             std::vector<Assignment>& out, Dimension& reason);
  double domain_cost(const ClusterState& state, const std::vector<NodeId>& nodes) const;
  // The steps of place(), narrowest domain first; each binds the whole gang
  // or leaves the state as it found it.
  GangPlacement place_single(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                             std::span<const uint8_t> base_mask);
  std::optional<GangPlacement> place_on_one_node(ClusterState& state, std::span<const PodId> pods,
                                                 const GangRequest& gang, std::span<const uint8_t> base_mask);
  std::optional<GangPlacement> place_in_level(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                                              std::span<const uint8_t> base_mask, size_t level);
  GangPlacement place_cluster_wide(ClusterState& state, std::span<const PodId> pods, const GangRequest& gang,
                                   std::span<const uint8_t> base_mask);
  static bool allowed_by(std::span<const uint8_t> mask, int i) {
    return mask.empty() || mask[static_cast<size_t>(i)] != 0;
  }
  bool node_can_hold_all(const ClusterState& state, NodeId n, const GangRequest& gang) const;

  Scheduler& scheduler_;
  int node_count_;
  std::vector<TopologyLevel> levels_;
  std::vector<Domains> domains_;  // per level
  const TargetWorkload* frag_target_;
  std::vector<uint8_t> mask_;
};

}  // namespace gpupack
