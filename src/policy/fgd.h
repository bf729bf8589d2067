// FGD (fragmentation gradient descent): place the pod where the node's
// expected fragmentation for the target workload grows least
// (frag/fgd.h defines F).
//   score = trunc(100 x sigmoid((F(n) - F(n after the pod)) / 1000))
// A shared (fractional) pod tries every GPU that fits and takes the best
// score, the lowest-index GPU reaching it; other pods take the lowest-index
// GPUs that fit (whole-GPU pods: the lowest-index free GPUs).
//
// Performance: F(n) is cached per node version, and the (score, GPUs) result
// per (node version, request shape), so each pod re-evaluates only nodes that
// changed since that shape was last scored. Request shapes are (cpu_milli,
// gpu_count, gpu_milli); memory and allowed models only affect the filter.
//
// Hardware (docs/HARDWARE.md): for a request that is not plain, or on a node
// with a hardware setup, the placement comes from choose_placement() and F(n)
// is FGD's measure over the node's non-MIG GPUs plus, for each MIG GPU,
// mig_fragmentation_milli (the MIG-aware measure, default size-weighted
// mix). These scores are not cached.
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "frag/fgd.h"
#include "policy/policy.h"

namespace gpupack {

class FgdPolicy final : public Policy {
 public:
  explicit FgdPolicy(std::shared_ptr<const TargetWorkload> target);
  std::string_view name() const override { return "fgd"; }
  void prepare(const ClusterState& state, const Request& req) override;
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override;
  // score() writes only the scored node's cache entries.
  bool parallel_score() const override { return true; }

  // Uncached evaluation (exposed for tests and for other planners).
  NodeScore evaluate(const ClusterState& state, NodeId node, const Request& req) const;

 private:
  struct Entry {
    uint64_t version = 0;  // 0 = empty; ClusterState versions start at 1
    int32_t score = 0;
    uint32_t gpu_mask = 0;
  };
  double node_frag(const ClusterState& state, NodeId node);
  NodeScore hardware_score(const ClusterState& state, NodeId node, const Request& req) const;

  std::shared_ptr<const TargetWorkload> target_;
  std::vector<double> frag_;
  std::vector<uint64_t> frag_version_;
  std::map<std::tuple<int64_t, int32_t, int32_t>, size_t> shape_index_;
  std::vector<std::vector<Entry>> cache_;  // [shape][node]
  std::vector<Entry>* current_ = nullptr;
  bool plain_request_ = true;  // set by prepare()
};

}  // namespace gpupack
