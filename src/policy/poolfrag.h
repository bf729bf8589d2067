// PoolFrag: capfrag, with the GPU models that other pods cannot do without
// left to those pods when FGD's score allows.
//
// Rule, per feasible node n (in this order; higher is better):
//  1. FGD's score, unchanged (policy/fgd.h).
//  2. For a GPU request that several GPU models present in the cluster may
//     serve: the slack of n's model pool P,
//       slack(P) = (cap_P / cap) / r_P,
//     cap_P = the pool's GPU milli, cap = the cluster's, and r_P = the share
//     of the workload's GPU demand (the target's classes and its tail of
//     rare ones: a model only rare classes need is still needed) that only
//     a proper subset of the present models may serve, spread over that
//     subset in proportion to pool capacity (a class allowed on V100M16 and
//     V100M32 adds its demand to both, split by their sizes). slack < 1: the
//     pool's own constrained pods alone would fill it by the time the
//     cluster's capacity has arrived; a pool no constrained class needs has
//     infinite slack. More slack scores higher. Pods that may use one model
//     only, CPU-only pods and clusters or workloads without model
//     constraints: constant key.
//  3. capfrag's keys 2 and 3 (policy/capfrag.h): the least growth of
//     stranded capacity S, then best fit.
//  4. Then the scheduler's node rank.
// Why: FGD's F counts all free milli of a node as a fragment for every class
// that may not use its model, so a pod lowers F most on the models that the
// most classes refuse, and pods that could go anywhere fill the pools that
// constrained pods need (bench/RESULTS.md, "Tried 2026-12-02"). Among nodes
// FGD scores equally, key 2 sends them to the pool with the most room
// beyond its own constrained demand. Placed above FGD's score the same key
// wins 6 pp at 100% arrived on gpuspec33 but loses the gain at 130% (the
// protected pools end CPU-bound and partly empty); see the ablation in
// bench/RESULTS.md ("poolfrag").
//
// Constants: none fitted. The slack is compared in steps of 1/1000
// (key = round(1000 x slack)); steps of 1/10 to 1/10,000 give the same
// 10-seed curves on the four openb traces (sensitivity table in
// bench/RESULTS.md). The demand shares come from the workload's class
// counts (FGD's target and its tail), memory ignored.
//
// Scores depend on the node's state and the request only (the slack of a
// pool is fixed by the cluster's pools and the target), so the scheduler's
// node-class walk and class index apply; the cost is capfrag's plus one
// lookup per node. Requests that are not plain, or a cluster with a
// hardware-configured node, are scored by FGD as in capfrag.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "policy/capfrag.h"
#include "policy/policy.h"

namespace gpupack {

class PoolFragPolicy final : public Policy {
 public:
  explicit PoolFragPolicy(std::shared_ptr<const TargetWorkload> target);
  // With capfrag's `options` under the slack key (dualfrag: packing_loss).
  // fresh_first (dualfrag): under the slack key, a pod that shares a GPU
  // (0 < gpu_milli < 1000) and asks more CPU per GPU milli than the node has
  // per GPU (cpu x GPUs x 1000 > node CPU x gpu_milli) scores the node higher
  // when it is fully free (ClusterState::fully_free); the 16-bit field then
  // holds the slack key, clamped to 15 bits (a slack of 32.767 or more,
  // infinite included), over that one bit.
  PoolFragPolicy(std::shared_ptr<const TargetWorkload> target, CapFragPolicy::Options options, std::string name,
                 bool fresh_first = false);
  std::string_view name() const override { return name_; }
  void prepare(const ClusterState& state, const Request& req) override;
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  bool parallel_score() const override { return true; }
  uint64_t scoring_epoch() const override { return capfrag_.scoring_epoch(); }
  bool rescored_nodes(uint64_t since, std::vector<NodeId>* out) const override {
    return capfrag_.rescored_nodes(since, out);
  }

  // slack(P) of the pool of `model` in `state` (infinity when no constrained
  // class needs it, 0 when the cluster has no GPU of that model). For tests.
  double pool_slack(const ClusterState& state, GpuModelId model);

 private:
  // The pools are a property of one ClusterState: recomputed (O(nodes +
  // classes x models)) when the state's construction stamp
  // (tie_order_stamp, also renewed by set_tie_order) or node count differs.
  bool pools_stale(const ClusterState& state) const;
  void refresh_pools(const ClusterState& state);

  std::shared_ptr<const TargetWorkload> target_;
  std::string name_;
  CapFragPolicy capfrag_;
  int node_count_ = -1;
  uint64_t pools_stamp_ = 0;
  ModelMask present_ = 0;
  std::array<double, kMaxGpuModels> slack_{};
  std::array<int64_t, kMaxGpuModels> key_{};  // round(1000 x slack), clamped to 16 bits
  bool steer_ = false;                        // key 2 applies to the current request
  bool fresh_first_ = false;
  bool fresh_ = false;  // fresh_first_ applies to the current request
};

}  // namespace gpupack
