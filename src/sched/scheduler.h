// Scheduler: filter -> score -> select -> bind, for one pod at a time.
//
// Contract: decide() walks every node once (O(nodes) filter checks plus one
// policy score per feasible node), allocates nothing after the first call,
// and changes nothing. The highest score wins; ties go to the node with the
// lowest rank (default rank = node index). schedule() binds the decision
// through ClusterState::bind. A failed decision carries the dimension that
// blocked most nodes. One Scheduler serves one thread.
// Hardware: for a request that is not plain, or on a node with a hardware
// setup, the in-node placement (GPUs, MIG instance, NUMA node) comes from
// choose_placement() with the scheduler's PlacementOptions; the policy's
// score still ranks the nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "model/cluster_state.h"
#include "policy/gpu_choice.h"
#include "policy/policy.h"

namespace gpupack {

struct Decision {
  Assignment assignment;  // node == kNoNode when nothing fits
  int64_t score = 0;
  int feasible_nodes = 0;
  Dimension reason = Dimension::kNone;  // set when nothing fits

  bool placed() const { return valid(assignment.node); }
};

class Scheduler {
 public:
  // `node_rank[i]` is node i's tie-break rank (lower wins); empty = index order.
  explicit Scheduler(Policy& policy, std::vector<int64_t> node_rank = {});

  Decision decide(const ClusterState& state, const Request& req);
  // When off, a failed decision leaves `reason` kNone and skips the second
  // pass over the nodes that finds it (simulators that only count failures).
  void set_explain_failures(bool on) { explain_failures_ = on; }
  Decision schedule(ClusterState& state, PodId pod, const Request& req);
  Policy& policy() { return policy_; }
  // In-node placement rules for hardware requests (MIG slot choice).
  void set_placement_options(const PlacementOptions& options) { placement_ = options; }
  const PlacementOptions& placement_options() const { return placement_; }

 private:
  struct Candidate {
    NodeId node;
    int64_t score;
    Assignment assignment;
  };
  int64_t rank(NodeId n) const { return node_rank_.empty() ? static_cast<int64_t>(n) : node_rank_[index(n)]; }
  Dimension most_common_reason(const ClusterState& state, const Request& req) const;

  Policy& policy_;
  std::vector<int64_t> node_rank_;
  std::vector<Candidate> scratch_;
  bool explain_failures_ = true;
  PlacementOptions placement_;
};

}  // namespace gpupack
