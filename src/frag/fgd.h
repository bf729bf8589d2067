// FGD fragmentation measure (Weng et al., "Beware of Fragmentation", ATC'23).
//
// Contract: a `TargetWorkload` is a distribution over request classes that the
// cluster expects to serve. The fragmentation F(n) of a node is the expected
// GPU milli on it that a request drawn from that distribution could not use:
//   F(n) = sum_m p_m * f(n, m), L = total free GPU milli on n,
//   f = L when m is CPU-only, or n's model is not allowed for m, or n cannot
//       host m (too few GPUs with free >= m's per-GPU milli, or too little CPU);
//   f = free milli of the GPUs whose free < m's per-GPU milli, otherwise.
// The sum is accumulated in the reference simulator's bucket order (see
// docs/ALGORITHMS.md) so that scores reproduce its placements bit for bit.
// All functions are pure, allocation-free on the hot path and O(classes x
// GPUs) per node.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/request.h"

namespace gpupack {

// GPUs whose free milli reaches `milli`, and the free milli summed over the
// others (what a pod needing `milli` per GPU cannot use). O(GPUs).
struct GpuFit {
  int fitting = 0;
  int64_t below_milli = 0;
};
inline GpuFit gpus_fitting(std::span<const int32_t> gpu_free_milli, int32_t milli) {
  GpuFit r;
  for (int32_t f : gpu_free_milli) {
    if (f >= milli) {
      ++r.fitting;
    } else {
      r.below_milli += f;
    }
  }
  return r;
}

struct TargetClass {
  int64_t cpu_milli = 0;
  int32_t gpu_count = 0;
  int32_t gpu_milli = 0;  // per GPU
  ModelMask allowed_models = 0;
  int64_t count = 0;      // pods of this class in the source workload
  double popularity = 0;  // p_m, sums to 1 over the kept classes
};

struct TargetWorkload {
  std::vector<TargetClass> classes;  // most popular first
  // The classes past the coverage cut (popularity 0), most popular first:
  // with `classes`, the whole workload, for rules that must see its rare
  // classes too (dualfrag's whole-node reserve). FGD's F does not read them.
  std::vector<TargetClass> tail;

  // classes then tail: every class of the workload, rare ones included.
  std::vector<TargetClass> all_classes() const {
    std::vector<TargetClass> all = classes;
    all.insert(all.end(), tail.begin(), tail.end());
    return all;
  }

  // Classes by (cpu_milli, gpu_milli, gpu_count, model key), memory ignored;
  // sorted by count descending (equal counts keep first appearance), the top
  // classes kept until their cumulative share reaches `coverage`, then
  // renormalised. `model_keys[i]` names request i's allowed-model list as the
  // source wrote it (empty span: the mask itself is the key).
  static TargetWorkload from_requests(std::span<const Request> requests, std::span<const std::string> model_keys = {},
                                      double coverage = 0.95);
  // The same from classes already counted, in first-appearance order
  // (`count` set, popularity ignored); `total` = the requests counted.
  static TargetWorkload from_classes(std::vector<TargetClass> order, int64_t total, double coverage = 0.95);
};

// F(n) for a node of `model` with `cpu_free_milli` and per-GPU free milli.
double node_fragmentation_milli(const TargetWorkload& target, GpuModelId model, int64_t cpu_free_milli,
                                std::span<const int32_t> gpu_free_milli);

double node_fragmentation_milli(const TargetWorkload& target, const ClusterState& state, NodeId node);

// Sum of F(n) over all nodes. O(nodes x classes x GPUs).
double cluster_fragmentation_milli(const TargetWorkload& target, const ClusterState& state);

// Keeps F(n) per node, refreshed only for nodes whose version changed, and
// their sum. For simulators that record fragmentation after every event.
class FragTracker {
 public:
  FragTracker(const TargetWorkload& target, const ClusterState& state);
  // Refreshes one node (call after it changed). O(classes x GPUs).
  void refresh(const ClusterState& state, NodeId node);
  double node_milli(NodeId node) const { return node_frag_[index(node)]; }
  double total_milli() const { return total_; }

 private:
  const TargetWorkload& target_;
  std::vector<double> node_frag_;
  std::vector<uint64_t> version_;
  double total_ = 0;
};

}  // namespace gpupack
