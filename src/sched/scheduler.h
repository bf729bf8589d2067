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
// (node, GPUs, score, feasible count) is the walk's. When the policy's
// scoring_epoch() changes the indexes are dropped, or, where the policy names
// the nodes whose scores changed (Policy::rescored_nodes: dualfrag's
// whole-node reserve), only those nodes' classes are assessed again.
// set_use_class_index(false) walks the classes instead.
// Parallel scoring: with set_work_pool() (util/work_pool.h, more than one
// lane) and a policy whose score() may run concurrently on distinct nodes
// (Policy::parallel_score), a walk that meets at least
// kParallelMinDistinct distinct nodes or classes (a policy not scoring by
// state, a hardware request, a class walk, a candidate list of many
// classes) is split into contiguous ranges scored on the pool's lanes;
// each range keeps its own winner, feasible count and scored list, and they
// are merged in range order by the same (score, rank, index) order, so the
// decision, the scores and their order are those of the one-thread walk.
// A candidate list naming a node twice is walked on one thread.
// evaluate() is decide() over `candidates` (empty = every node, in index
// order; the mask still applies) that can also report every feasible
// candidate's final score (after min-max normalisation when the policy asks
// for it) and assignment, in candidate order. A candidate listed twice is
// evaluated twice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "model/cluster_state.h"
#include "policy/gpu_choice.h"
#include "policy/policy.h"
#include "sched/class_index.h"
#include "util/work_pool.h"

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
  // Not owned; nullptr (the default) scores on the calling thread only.
  void set_work_pool(WorkPool* pool) { pool_ = pool; }
  // The fewest distinct nodes or classes a walk needs to go parallel (below
  // it the threads' wake-up costs more than they save; tests lower it).
  static constexpr int kParallelMinDistinct = 2048;
  void set_parallel_min_distinct(int n) { parallel_min_ = std::max(1, n); }
  // Walks split across the pool so far (tests, benchmarks).
  uint64_t parallel_walks() const { return parallel_walks_; }
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
  uint64_t epoch_ = 0;            // the policy's scoring_epoch() the indexes hold
  std::vector<NodeId> rescored_;  // Policy::rescored_nodes, per epoch change
  std::vector<int32_t> rescored_classes_;
  // Per class of identical nodes, this evaluation's result (candidate walks).
  struct ClassMemo {
    uint64_t generation = 0;
    bool fits = false;
    NodeScore score;
    Assignment assignment;
  };
  // What one thread of a walk writes: the hardware placement of the node
  // being filtered and its class memo (lane 0 serves the one-thread walk).
  // Cache-line aligned: lanes write `hw` for every node they filter.
  struct alignas(64) Lane {
    Assignment hw;
    std::vector<ClassMemo> memo;
    uint64_t memo_generation = 0;
  };
  // One range of a walk: its winner, feasible count and scored nodes.
  struct Part {
    bool placed = false;
    int64_t score = 0, rank = 0;
    Assignment assignment;
    int64_t feasible = 0;
    int64_t lo = 0, hi = 0;
    std::vector<ScoredNode> list;
  };
  // Part `p` takes (score, rank, node) if it ranks above its winner.
  static void consider(Part& p, int64_t score, int64_t rank, const Assignment& a);
  bool distinct_candidates(const ClusterState& state, std::span<const NodeId> candidates, bool by_class_memo);
  std::vector<Lane> lanes_{1};
  std::vector<Part> parts_;
  std::vector<uint32_t> seen_;        // per node: stamp of the last duplicate check
  std::vector<uint32_t> class_seen_;  // per class: the same stamp
  uint32_t seen_stamp_ = 0;
  WorkPool* pool_ = nullptr;
  int parallel_min_ = kParallelMinDistinct;
  uint64_t parallel_walks_ = 0;
  // The state and tie order for which the rank was found equal (or not).
  const ClusterState* order_checked_for_ = nullptr;
  uint64_t order_checked_stamp_ = 0;
  bool order_matches_ = false;
  PlacementOptions placement_;
};

}  // namespace gpupack
