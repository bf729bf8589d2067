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
}

StrandedPair StrandedPairEvaluator::operator()(GpuModelId model, int64_t cpu_free_milli,
                                               std::span<const int32_t> gpu_free_milli) const {
  int64_t free_total = 0;
  for (int32_t f : gpu_free_milli) free_total += f;
  StrandedPair out;
  if (free_total == 0) return out;
  out.capacity = out.one_pod = cpu_only_weight_ * free_total;
  for (const Group& g : groups_) {
    if (!model_allowed(g.allowed_models, model)) {
      out.capacity += g.weight_sum * free_total;
      out.one_pod += g.weight_sum * free_total;
      continue;
    }
    int fitting = 0;
    int64_t below = 0, units = 0;
    for (int32_t f : gpu_free_milli) {
      if (f >= g.gpu_milli) {
        ++fitting;
        units += f / g.gpu_milli;
      } else {
        below += f;
      }
    }
    const int64_t gpu_pods = units / g.gpu_count;
    const int64_t pod_milli = int64_t{g.gpu_count} * g.gpu_milli;
    for (const Member& m : g.members) {
      const int64_t k_cpu = m.cpu_milli > 0 ? cpu_free_milli / m.cpu_milli : std::numeric_limits<int64_t>::max();
      out.one_pod += m.weight * (fitting < g.gpu_count || k_cpu < 1 ? free_total : below);
      out.capacity += m.weight * (free_total - std::min(gpu_pods, k_cpu) * pod_milli);
    }
  }
  return out;
}

}  // namespace gpupack
