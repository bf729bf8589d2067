// Scheduler: filter -> score -> select -> bind, for one pod at a time.
//
// This is the one filter -> score -> normalise -> choose cycle: the
// simulator, the gang placer, the defrag baselines (policy_place) and the
// extender (evaluate() over the scheduler's candidate nodes) all call it, so
// they cannot disagree on a node's feasibility, score or GPUs.
//
// Contract: decide() walks every node once (O(nodes) filter checks plus one
// policy score per feasible node), allocates nothing after the first call,
// and changes nothing. The highest score wins; ties go to the node with the
// lowest rank (default rank = node index). schedule() binds the decision
// through ClusterState::bind. A failed decision carries the dimension that
// blocked most nodes. set_node_mask() restricts the candidates to the nodes
// whose mask byte is non-zero (gang domains, reservations); an empty mask
// (the default) allows every node. One Scheduler serves one thread.
// Hardware: for a request that is not plain, or on a node with a hardware
// setup, the in-node placement (GPUs, MIG instance, NUMA node) comes from
// choose_placement() with the scheduler's PlacementOptions; the policy's
// score still ranks the nodes.
// Node classes: with no candidate list, no score list asked for, no node mask,
// a policy that scores by state alone and a rank equal to the state's tie
// order (ClusterState::set_tie_order; index order when both are default),
// decide() scores one node per class of identical nodes (the class's first
// in rank order), so its cost follows the number of distinct node states, not
// of nodes; the decision is the one the full walk makes. Otherwise (a
// candidate list, a score list, a mask, another rank) with such a policy,
// every candidate is still visited but the fit, score and GPUs are computed
// once per class and shared by its members (the mask and the rank stay per
// node). set_use_node_classes(false) forces the plain walk (differential
// tests, benchmarks).
// Class index: deciding a plain request by class, decide() does not even
// walk the classes: a per-shape index
// (sched/class_index.h) re-reads only the classes changed since that shape's
// last decision and keeps the fitting ones in a heap in decision order, so a
// decision costs about the changes since then, not the classes. The decision
// (node, GPUs, score, feasible count) is the walk's.
// set_use_class_index(false) walks the classes instead.
// evaluate() is decide() over `candidates` (empty = every node, in index
// order; the mask still applies) that can also report every feasible
// candidate's final score (after min-max normalisation when the policy asks
// for it) and assignment, in candidate order. A candidate listed twice is
// evaluated twice.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "model/cluster_state.h"
#include "policy/gpu_choice.h"
#include "policy/policy.h"
#include "sched/class_index.h"

namespace gpupack {

struct ScoredNode {
  NodeId node;
  int64_t score = 0;      // final: 0..100 when the policy normalises
  Assignment assignment;  // where the pod would go on this node
};

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

  Decision decide(const ClusterState& state, const Request& req) { return evaluate(state, req, {}, nullptr); }
  Decision evaluate(const ClusterState& state, const Request& req, std::span<const NodeId> candidates,
                    std::vector<ScoredNode>* scored);
  // When off, a failed decision leaves `reason` kNone and skips the second
  // pass over the nodes that finds it (simulators that only count failures).
  void set_explain_failures(bool on) { explain_failures_ = on; }
  void set_use_node_classes(bool on) { use_classes_ = on; }
  // When off, decisions by class walk every class instead of reading the
  // per-shape class index (differential tests, benchmarks).
  void set_use_class_index(bool on) { use_index_ = on; }
  Decision schedule(ClusterState& state, PodId pod, const Request& req);
  Policy& policy() { return policy_; }
  std::span<const int64_t> node_rank() const { return node_rank_; }
  // Nodes with mask[i] == 0 are skipped; empty = all nodes. The mask must
  // cover every node and outlive its use; the caller owns it.
  void set_node_mask(std::span<const uint8_t> mask) { node_mask_ = mask; }
  std::span<const uint8_t> node_mask() const { return node_mask_; }
  // In-node placement rules for hardware requests (MIG slot choice).
  // (They decide fits and GPUs on nodes with a hardware setup, so the class
  // indexes start again.)
  void set_placement_options(const PlacementOptions& options) {
    placement_ = options;
    indexes_.clear();
  }
  const PlacementOptions& placement_options() const { return placement_; }

 private:
  int64_t rank(NodeId n) const { return node_rank_.empty() ? static_cast<int64_t>(n) : node_rank_[index(n)]; }
  Dimension most_common_reason(const ClusterState& state, const Request& req) const;

  Policy& policy_;
  std::vector<int64_t> node_rank_;
  bool allowed(int i) const { return node_mask_.empty() || node_mask_[static_cast<size_t>(i)] != 0; }

  bool classes_apply(const ClusterState& state);

  std::vector<ScoredNode> scratch_;
  std::span<const uint8_t> node_mask_;
  bool explain_failures_ = true;
  bool use_classes_ = true;
  bool use_index_ = true;
  // Per shape of plain request (CPU, memory, GPU count, GPU milli, allowed
  // models): the best class, kept across decisions (sched/class_index.h).
  using ShapeKey = std::tuple<int64_t, int64_t, int32_t, int32_t, ModelMask>;
  std::map<ShapeKey, ClassIndex> indexes_;
  // Per class of identical nodes, this evaluation's result (candidate walks).
  struct ClassMemo {
    uint64_t generation = 0;
    bool fits = false;
    NodeScore score;
    Assignment assignment;
  };
  std::vector<ClassMemo> memo_;
  uint64_t memo_generation_ = 0;
  // The state and tie order for which the rank was found equal (or not).
  const ClusterState* order_checked_for_ = nullptr;
  uint64_t order_checked_stamp_ = 0;
  bool order_matches_ = false;
  PlacementOptions placement_;
};

}  // namespace gpupack
