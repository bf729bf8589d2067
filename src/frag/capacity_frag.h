// Capacity fragmentation: the GPU capacity of a node that a target class
// could not use even if the node were filled with that class alone.
//
// Contract: for a node with free GPU milli L (per GPU g: free_g), free CPU C
// and a target class m (frag/fgd.h's TargetClass), the number of m-pods the
// node could still host at once is
//   k_gpu = floor(sum_g floor(free_g / m.gpu_milli) / m.gpu_count)  (GPU side)
//   k_cpu = floor(C / m.cpu_milli)  (infinite when m.cpu_milli == 0)
//   k = min(k_gpu, k_cpu)
// and the capacity stranded for m is s(n, m) = L - k x m.gpu_count x m.gpu_milli
// (s = L when m is CPU-only or the node's model is not allowed for m).
// FGD's f(n, m) asks only whether ONE m-pod fits; s also counts the GPUs that
// CPU exhaustion strands after the first pod, and the remainder of a GPU that
// holds a whole number of shared pods (a fresh GPU strands 60 milli for a
// 470-milli class, 190 for 810).
//   S(n) = sum_m w_m x s(n, m), in integer arithmetic (exact, no ties lost to
// rounding), where w_m is the class's weight: its pod count (FGD's
// popularity up to a common factor) or its GPU demand (count x gpu_count x
// gpu_milli; CPU-only classes then weigh 0).
// Pure, allocation-free, O(classes x GPUs) per node.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frag/fgd.h"
#include "model/cluster_state.h"

namespace gpupack {

enum class ClassWeight : uint8_t {
  kPods,    // w_m = pods of class m (FGD's popularity, unnormalised)
  kDemand,  // w_m = GPU milli class m asks for in the workload
};

// Integer weights of the target's classes, in the target's class order.
std::vector<int64_t> class_weights(const TargetWorkload& target, ClassWeight weight);

// S(n) for a node of `model` with the given free CPU and per-GPU free milli.
// `one_pod` = true replaces k by min(k, 1) (FGD's "can one pod fit" view,
// with the stranded amount L when none fits and the GPUs below the request
// otherwise), for the ablation. Result in weight x milli.
int64_t capacity_fragmentation(const TargetWorkload& target, std::span<const int64_t> weights, GpuModelId model,
                               int64_t cpu_free_milli, std::span<const int32_t> gpu_free_milli, bool one_pod = false,
                               bool cpu_capacity = true);

// Both at once, over the same weights: S(n) (capacity, CPU capacity) and
// FGD's one-pod measure (frag/fgd.h's F x sum w, exact). One pass.
struct StrandedPair {
  int64_t capacity = 0;
  int64_t one_pod = 0;
};
StrandedPair stranded_pair(const TargetWorkload& target, std::span<const int64_t> weights, GpuModelId model,
                           int64_t cpu_free_milli, std::span<const int32_t> gpu_free_milli);

// stranded_pair() for one target and one set of weights, with the classes
// that share their GPU side (GPU count, GPU milli, allowed models; the openb
// default target's 35 classes form 17 such groups) added up per group, and
// the groups that share a GPU milli (whole-GPU pods of 1, 2, 4 or 8 GPUs)
// walking the GPUs once between them, without branches or divisions while
// every free milli lies within one GPU (a pods-per-GPU table for each GPU
// milli of at most half a GPU); each member then adds its CPU side in O(1),
// dividing only where the CPU binds before the GPUs. Same result as
// stranded_pair(), exactly. Immutable after construction; the target and
// weights are copied.
class StrandedPairEvaluator {
 public:
  StrandedPairEvaluator() = default;
  StrandedPairEvaluator(const TargetWorkload& target, std::span<const int64_t> weights);
  StrandedPair operator()(GpuModelId model, int64_t cpu_free_milli, std::span<const int32_t> gpu_free_milli) const;

 private:
  struct Member {
    int64_t cpu_milli = 0;
    int64_t weight = 0;
  };
  struct Group {  // groups_ is sorted by gpu_milli
    int32_t gpu_count = 0;
    int32_t gpu_milli = 0;
    ModelMask allowed_models = 0;
    int64_t weight_sum = 0;
    std::vector<Member> members;
    int32_t per_gpu = -1;  // index into pods_per_gpu_ (GPU milli of at most half a GPU), else -1
  };
  std::vector<Group> groups_;
  // Per GPU milli of at most half a GPU: pods per GPU by free milli
  // 0..kGpuMilliPerGpu (free / gpu_milli), to keep the division off the walk.
  std::vector<std::vector<uint16_t>> pods_per_gpu_;
  int64_t cpu_only_weight_ = 0;  // classes without GPUs: all free milli stranded
};

}  // namespace gpupack
