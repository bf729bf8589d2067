#include "frag/capacity_frag.h"

#include <algorithm>
#include <limits>

namespace gpupack {

std::vector<int64_t> class_weights(const TargetWorkload& target, ClassWeight weight) {
  std::vector<int64_t> w;
  w.reserve(target.classes.size());
  for (const TargetClass& m : target.classes)
    w.push_back(weight == ClassWeight::kPods ? m.count : m.count * int64_t{m.gpu_count} * m.gpu_milli);
  return w;
}

int64_t capacity_fragmentation(const TargetWorkload& target, std::span<const int64_t> weights, GpuModelId model,
                               int64_t cpu_free_milli, std::span<const int32_t> gpu_free_milli, bool one_pod,
                               bool cpu_capacity) {
  int64_t free_total = 0;
  for (int32_t f : gpu_free_milli) free_total += f;
  if (free_total == 0) return 0;
  int64_t sum = 0;
  for (size_t i = 0; i < target.classes.size(); ++i) {
    const int64_t w = weights[i];
    if (w == 0) continue;
    const TargetClass& m = target.classes[i];
    if (m.gpu_count == 0 || !model_allowed(m.allowed_models, model)) {
      sum += w * free_total;
      continue;
    }
    int64_t k_cpu = m.cpu_milli > 0 ? cpu_free_milli / m.cpu_milli : std::numeric_limits<int64_t>::max();
    if (!cpu_capacity && k_cpu >= 1) k_cpu = std::numeric_limits<int64_t>::max();
    if (one_pod) {
      const auto [fitting, below] = gpus_fitting(gpu_free_milli, m.gpu_milli);
      sum += w * (fitting < m.gpu_count || k_cpu < 1 ? free_total : below);
      continue;
    }
    int64_t units = 0;
    for (int32_t f : gpu_free_milli) units += f / m.gpu_milli;
    const int64_t k = std::min(units / m.gpu_count, k_cpu);
    sum += w * (free_total - k * m.gpu_count * m.gpu_milli);
  }
  return sum;
}

StrandedPair stranded_pair(const TargetWorkload& target, std::span<const int64_t> weights, GpuModelId model,
                           int64_t cpu_free_milli, std::span<const int32_t> gpu_free_milli) {
  int64_t free_total = 0;
  for (int32_t f : gpu_free_milli) free_total += f;
  StrandedPair out;
  if (free_total == 0) return out;
  for (size_t i = 0; i < target.classes.size(); ++i) {
    const int64_t w = weights[i];
    if (w == 0) continue;
    const TargetClass& m = target.classes[i];
    if (m.gpu_count == 0 || !model_allowed(m.allowed_models, model)) {
      out.capacity += w * free_total;
      out.one_pod += w * free_total;
      continue;
    }
    const int64_t k_cpu = m.cpu_milli > 0 ? cpu_free_milli / m.cpu_milli : std::numeric_limits<int64_t>::max();
    int fitting = 0;
    int64_t below = 0, units = 0;
    for (int32_t f : gpu_free_milli) {
      if (f >= m.gpu_milli) {
        ++fitting;
        units += f / m.gpu_milli;
      } else {
        below += f;
      }
    }
    out.one_pod += w * (fitting < m.gpu_count || k_cpu < 1 ? free_total : below);
    out.capacity += w * (free_total - std::min(units / m.gpu_count, k_cpu) * m.gpu_count * m.gpu_milli);
  }
  return out;
}

StrandedPairEvaluator::StrandedPairEvaluator(const TargetWorkload& target, std::span<const int64_t> weights) {
  for (size_t i = 0; i < target.classes.size(); ++i) {
    const int64_t w = weights[i];
    if (w == 0) continue;
    const TargetClass& m = target.classes[i];
    if (m.gpu_count == 0) {
      cpu_only_weight_ += w;
      continue;
    }
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
      return g.gpu_count == m.gpu_count && g.gpu_milli == m.gpu_milli && g.allowed_models == m.allowed_models;
    });
    if (it == groups_.end())
      it = groups_.insert(groups_.end(), Group{m.gpu_count, m.gpu_milli, m.allowed_models, 0, {}});
    it->weight_sum += w;
    it->members.push_back({m.cpu_milli, w});
  }
  // Groups of one GPU milli next to each other, so that one walk serves them.
  std::stable_sort(groups_.begin(), groups_.end(),
                   [](const Group& a, const Group& b) { return a.gpu_milli < b.gpu_milli; });
  for (size_t i = 0; i < groups_.size(); ++i) {
    Group& g = groups_[i];
    if (2 * g.gpu_milli > kGpuMilliPerGpu) continue;  // a fitting GPU holds one pod
    if (i > 0 && groups_[i - 1].gpu_milli == g.gpu_milli) {
      g.per_gpu = groups_[i - 1].per_gpu;
      continue;
    }
    g.per_gpu = static_cast<int32_t>(pods_per_gpu_.size());
    std::vector<uint16_t>& table = pods_per_gpu_.emplace_back(kGpuMilliPerGpu + 1);
    for (int32_t f = 0; f <= kGpuMilliPerGpu; ++f)
      table[static_cast<size_t>(f)] = static_cast<uint16_t>(f / g.gpu_milli);
  }
}

StrandedPair StrandedPairEvaluator::operator()(GpuModelId model, int64_t cpu_free_milli,
                                               std::span<const int32_t> gpu_free_milli) const {
  int64_t free_total = 0;
  bool within_gpu = true;  // every free milli in 0..kGpuMilliPerGpu, as ClusterState keeps them
  for (int32_t f : gpu_free_milli) {
    free_total += f;
    within_gpu = within_gpu && f >= 0 && f <= kGpuMilliPerGpu;
  }
  StrandedPair out;
  if (free_total == 0) return out;
  out.capacity = out.one_pod = cpu_only_weight_ * free_total;
  int32_t walked_milli = 0;        // the GPU milli `fitting`, `below` and `units` are for (0: none yet)
  int32_t fitting = 0, units = 0;  // a node's GPUs are few: 32-bit divisions below
  int64_t below = 0;
  for (const Group& g : groups_) {
    if (!model_allowed(g.allowed_models, model)) {
      out.capacity += g.weight_sum * free_total;
      out.one_pod += g.weight_sum * free_total;
      continue;
    }
    if (g.gpu_milli != walked_milli) {
      walked_milli = g.gpu_milli;
      fitting = units = 0;
      below = 0;
      // Branch-free over the GPUs: whether a GPU fits is data, not pattern.
      const int32_t milli = g.gpu_milli;
      for (int32_t f : gpu_free_milli) {
        const bool fits = f >= milli;
        fitting += fits ? 1 : 0;
        below += fits ? 0 : f;
      }
      if (!within_gpu) {
        for (int32_t f : gpu_free_milli) units += f >= milli ? f / milli : 0;
      } else if (g.per_gpu < 0) {
        units = fitting;  // above half a GPU, a fitting GPU holds one pod
      } else {
        const uint16_t* table = pods_per_gpu_[static_cast<size_t>(g.per_gpu)].data();
        for (int32_t f : gpu_free_milli) units += table[f];
      }
    }
    const int64_t gpu_pods = units / g.gpu_count;
    const int64_t pod_milli = int64_t{g.gpu_count} * g.gpu_milli;
    const bool gpus_fit = fitting >= g.gpu_count;
    for (const Member& m : g.members) {
      // min(gpu_pods, cpu_free / cpu): the division only where the CPU binds.
      const int64_t k =
          m.cpu_milli == 0 || gpu_pods * m.cpu_milli <= cpu_free_milli ? gpu_pods : cpu_free_milli / m.cpu_milli;
      out.one_pod += m.weight * (gpus_fit && (m.cpu_milli == 0 || cpu_free_milli >= m.cpu_milli) ? below : free_total);
      out.capacity += m.weight * (free_total - k * pod_milli);
    }
  }
  return out;
}

}  // namespace gpupack
