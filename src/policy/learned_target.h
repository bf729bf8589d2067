// LearnedTarget: a target-workload policy (fgd, capfrag, poolfrag) whose
// target is learned from the requests it has been asked to place, instead of
// being read from the workload file. `--policy fgd+learned` in the registry.
//
// Contract:
// - Wraps the registry's policy `inner` (one that uses a target; the
//   registry refuses the suffix on others). Its name is "<inner>+learned".
// - Each prepare() counts its request as one arrival. When the count reaches
//   1, 2, 4, 8, ... the inner policy is rebuilt on the target of every
//   request counted so far (TargetWorkload::from_requests: classes by CPU,
//   GPU count, GPU milli and allowed models; memory ignored, as FGD's), so a
//   run of n arrivals rebuilds about log2(n) times, each O(arrivals so far),
//   and the target in use never lags by more than half the arrivals. Before
//   the first prepare() the target is empty.
// - Each rebuild changes scoring_epoch(): scores for the same node state and
//   request may change, so a Scheduler drops the class scores it keeps
//   across decisions. So does a change of the inner policy's own epoch.
// - score() and the scoring properties are the inner policy's.
// Why doubling and not every arrival: a rebuild starts the inner policy's
// per-node caches cold (a capfrag decision with cold caches costs 5-7x a warm
// FGD decision, bench/RESULTS.md), and the class shares settle within a few
// hundred arrivals when the arrivals are a shuffle of one workload.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "policy/policy.h"
#include "policy/registry.h"

namespace gpupack {

class LearnedTargetPolicy final : public Policy {
 public:
  // `inner` must be a registry entry with uses_target.
  LearnedTargetPolicy(const PolicyInfo& inner, uint64_t seed);
  std::string_view name() const override { return name_; }
  void prepare(const ClusterState& state, const Request& req) override;
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override {
    return inner_->score(state, node, req);
  }
  bool normalizes_scores() const override { return inner_->normalizes_scores(); }
  bool scores_by_state() const override { return inner_->scores_by_state(); }
  bool parallel_score() const override { return inner_->parallel_score(); }
  uint64_t scoring_epoch() const override { return epoch_; }

  // The target the inner policy uses now, and the requests counted (tests).
  const TargetWorkload& target() const { return *target_; }
  size_t arrivals() const { return seen_.size(); }

 private:
  PolicyFactory make_inner_;
  uint64_t seed_;
  std::string name_;
  std::vector<Request> seen_;
  size_t next_rebuild_ = 1;
  uint64_t epoch_ = 0;        // changes at each rebuild and with the inner policy's epoch
  uint64_t inner_epoch_ = 0;  // the inner policy's epoch last seen
  std::shared_ptr<const TargetWorkload> target_;
  std::unique_ptr<Policy> inner_;
};

}  // namespace gpupack
