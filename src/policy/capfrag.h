// CapFrag (capacity fragmentation): FGD's choice, with its ties broken by
// the GPU capacity a node would strand.
//
// Rule, per feasible node n (in this order; higher is better):
//  1. FGD's score, unchanged: trunc(100 x sigmoid((F(n) - F(n after)) / 1000)),
//     F = FGD fragmentation for the target workload (frag/fgd.h).
//  2. Among equal FGD scores, the least growth of stranded capacity
//     S(n) = sum_m count_m x s(n, m) (frag/capacity_frag.h): s is the GPU milli
//     class m could not use if n were filled with m alone, CPU included. FGD
//     asks only whether ONE pod of m fits; S also counts the GPUs that CPU
//     exhaustion strands after the first pod (8 free GPUs with CPU for 3 more
//     1-GPU pods strand 5 GPUs for that class; FGD: 0) and the remainder a
//     GPU keeps after a whole number of shared pods (a fresh GPU strands 60
//     milli for a 470 class). Compared in milli (dS / sum count), exact.
//  3. Then the node left with less free GPU (share of its GPUs): best fit.
//  4. Then the scheduler's node rank.
// FGD's integer score puts many nodes on one value (one point is ~40 milli
// of F) and lets the node rank choose among them; 2 and 3 choose there
// instead. Why S is not the primary key: alone (exact or FGD's sigmoid) it
// opens whole nodes too readily and multi-GPU pods fail early; see the
// ablation in bench/RESULTS.md.
// GPUs inside the node: a shared pod tries each distinct free value and takes
// the best (lowest index reaching it); other pods take the lowest-index GPUs
// that fit, as FGD.
//
// No constant is fitted: weights are the target's pod counts (FGD's
// popularity, unnormalised), the keys are ordered, not mixed.
//
// Options select other ingredients for the ablation (capfrag_ablation()
// registers them as policies when the build defines
// GPUPACK_CAPFRAG_ABLATION); the default is the rule above.
//
// Performance: F(n) and S(n) cached per node version, (score, GPUs) per
// (node version, request shape), as FgdPolicy; a candidate costs one
// O(classes x GPUs) pass computing F and S together (stranded_pair). A request that is not plain, or
// a cluster with any hardware-configured node, is scored by FGD itself
// (policy/fgd.h) for the whole decision.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "frag/capacity_frag.h"
#include "frag/packing_prices.h"
#include "policy/fgd.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "policy/whole_node_reserve.h"

namespace gpupack {

class CapFragPolicy final : public Policy {
 public:
  struct Options {
    bool fgd_first = true;                    // key 1 is FGD's score; false: S alone decides (key 2, then 3)
    ClassWeight weight = ClassWeight::kPods;  // weights of S
    bool one_pod = false;                     // S with FGD's one-pod test instead of capacity
    bool cpu_capacity = true;                 // false: CPU only decides whether one pod fits
    bool coarse_score = false;                // with !fgd_first: trunc(100 x sigmoid(dS / sum w / 1000))
    bool tie_break = true;                    // key 3
    bool packing_loss = false;                // a key above FGD's: the least packing loss (policy/dualfrag.h)
    // Ablation of dualfrag only: the loss under FGD's key instead of above
    // it; FGD's key or S left out.
    bool loss_under_fgd = false;
    bool fgd_key = true;
    bool stranded_key = true;
    // A key under FGD's score, above the pool slack: keep the whole nodes
    // that the target's largest pods need (policy/whole_node_reserve.h).
    bool whole_node_reserve = false;
  };
  CapFragPolicy(std::shared_ptr<const TargetWorkload> target, Options options, std::string name);
  explicit CapFragPolicy(std::shared_ptr<const TargetWorkload> target)
      : CapFragPolicy(std::move(target), Options{}, "capfrag") {}
  std::string_view name() const override { return name_; }
  void prepare(const ClusterState& state, const Request& req) override;
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  // score() writes only the scored node's cache entries.
  bool parallel_score() const override { return true; }
  // Changes when the whole-node reserve starts or stops holding a group.
  uint64_t scoring_epoch() const override { return epoch_; }
  // A flip changes only the flipped groups' fully free nodes' scores.
  bool rescored_nodes(uint64_t since, std::vector<NodeId>* out) const override;

  // The score's layout (with fgd_first), from the top: the packing-loss key
  // (packing_loss only, 13 bits) << kLossKeyShift | key1 = FGD's score
  // (0..100) << kFgdKeyShift | the whole-node reserve key (1 bit, 1 = the
  // node is not held; whole_node_reserve only) << kReserveKeyShift | a 16-bit
  // field left 0 for poolfrag's slack key (kSlackKeyShift) | key2 (16 bits)
  // << kStrandedKeyShift | key3 (10 bits).
  static constexpr int kStrandedKeyShift = 10;
  static constexpr int kSlackKeyShift = 26;
  static constexpr int kReserveKeyShift = 42;
  static constexpr int kFgdKeyShift = 43;
  static constexpr int kLossKeyShift = 50;
  static constexpr int64_t kLossKeyMax = (int64_t{1} << 13) - 1;  // loss of 8.191 GPUs or more
  // With loss_under_fgd (ablation): FGD's key << 56, the loss key << 43,
  // the rest as above.
  static constexpr int kFgdAboveLossShift = 56;
  static constexpr int kLossUnderFgdShift = 43;

  // True when the current request (after prepare) is scored by FGD itself:
  // not plain, or a cluster with a hardware-configured node; otherwise the
  // score has the layout above.
  bool scores_by_fgd() const { return use_fallback_; }

  // S(n) of a node now, in weight x milli (for tests).
  int64_t node_stranded(const ClusterState& state, NodeId node) const;

 private:
  struct Entry {
    uint64_t version = 0;  // 0 = empty
    int64_t score = 0;
    uint32_t gpu_mask = 0;
  };
  void refresh(const ClusterState& state, NodeId node);
  int64_t evaluate_after(const ClusterState& state, NodeId node, int64_t cpu_after, std::span<const int32_t> after,
                         int64_t free_after) const;

  std::shared_ptr<const TargetWorkload> target_;
  Options options_;
  std::string name_;
  std::vector<int64_t> weights_, fgd_weights_;
  double weight_sum_ = 1, fgd_weight_sum_ = 1;
  FgdPolicy fallback_;
  bool use_fallback_ = false;
  bool fused_ = false;  // S and F in one pass (stranded_pair): the default options
  bool has_hardware_nodes_ = false;
  PackingPrices prices_;                  // with packing_loss
  StrandedPairEvaluator pair_;            // with fused_
  std::vector<int64_t> frag_, fgd_frag_;  // S(n), F(n) x sum count (integer)
  std::vector<uint64_t> frag_version_;
  std::map<std::tuple<int64_t, int32_t, int32_t>, size_t> shape_index_;
  std::vector<std::vector<Entry>> cache_;  // [shape][node]
  std::vector<Entry>* current_ = nullptr;
  WholeNodeReserve reserve_;  // with whole_node_reserve
  uint64_t epoch_ = 0;
  std::vector<NodeId> flipped_nodes_;  // whose scores the last flip changed (epoch_ - 1 -> epoch_)
};

// The ablation variants (name, what changes, factory), "capfrag-..." names.
std::vector<PolicyInfo> capfrag_ablation();

}  // namespace gpupack
