// Preemption planning: which lower-priority jobs to evict so that a pending
// pod or gang of higher priority fits.
//
// Contract:
// - plan() never changes the state (it works inside a checkpoint and rolls
//   back exactly). Candidates are running jobs of strictly lower priority; a
//   job is evicted whole (every pod of a gang victim), never in part.
// - Among the plans it finds it returns the one that minimises, in order:
//   the highest victim priority, the number of victim pods, and the cluster's
//   FGD fragmentation after eviction and placement (when a target workload
//   is given; otherwise that key is 0). Two searches feed the choice: a
//   cluster-wide one (evict every candidate up to the lowest priority level
//   that makes room, then spare victims greedily, highest priority and
//   smallest first, while the job still fits), and, for a one-member job, a
//   per-node one as kube-scheduler does (only the candidates with a pod on
//   that node). The result is minimal (no victim can be spared) but not
//   guaranteed minimum.
// - Each victim carries a reason; the plan carries the placement the job
//   would get. The caller applies it (unbinds the victims, then places).
// - Cost: O(priority levels + victims) gang placements for the cluster-wide
//   search, plus O(nodes x victims on the node) fit checks per node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "model/cluster_state.h"
#include "sched/gang.h"

namespace gpupack {

struct Victim {
  int32_t job = 0;
  int priority = 0;
  int pods = 0;
  std::string reason;
};

struct PreemptionPlan {
  bool feasible = false;
  std::vector<Victim> victims;
  int max_victim_priority = 0;
  int victim_pods = 0;
  double frag_after_milli = 0;
  GangPlacement placement;  // where the job would go after the evictions
  std::string reason;       // why no plan, or a one-line summary
};

class PreemptionPlanner {
 public:
  // `frag_target` is optional and must outlive the planner.
  explicit PreemptionPlanner(GangPlacer& placer, const TargetWorkload* frag_target = nullptr)
      : placer_(placer), frag_target_(frag_target) {}

  PreemptionPlan plan(ClusterState& state, std::span<const RunningJob> running, const GangRequest& job,
                      std::span<const PodId> pods, int priority);

 private:
  struct Candidate;
  class VictimSet;
  struct FragBaseline {
    std::vector<double> per_node;  // FGD fragmentation per node before any eviction
    double cluster = 0;
  };
  // Puts back each of `evicted` (spare order) and evicts it again only when
  // the job no longer `fits()` without it; returns the victims kept.
  Candidate spare(ClusterState& state, VictimSet& set, std::vector<int> evicted,
                  const std::function<bool()>& fits) const;
  // Evicts candidates level by level (lowest priority first) until the job
  // fits; returns that level, or nullopt when even all of them are not enough.
  std::optional<int> lowest_sufficient_level(ClusterState& state, const VictimSet& set, const GangRequest& job,
                                             std::span<const PodId> pods) const;
  // Node -> candidates (priority <= threshold) with a pod on that node.
  std::map<int32_t, std::vector<int>> victims_by_node(const VictimSet& set, int threshold) const;
  FragBaseline frag_baseline(const ClusterState& state) const;
  double frag_after(const ClusterState& state, const VictimSet& set, const Candidate& cand,
                    const FragBaseline& before) const;
  PreemptionPlan describe(const Candidate& best, const VictimSet& set, const GangRequest& job, int priority) const;
  void evict(ClusterState& state, const RunningJob& j, std::vector<NodeId>* touched) const;
  double frag_delta(const ClusterState& state, const std::vector<NodeId>& touched,
                    const std::vector<double>& before) const;

  GangPlacer& placer_;
  const TargetWorkload* frag_target_;
};

}  // namespace gpupack
