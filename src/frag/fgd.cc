#include "frag/fgd.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpupack {

TargetWorkload TargetWorkload::from_requests(std::span<const Request> requests, std::span<const std::string> model_keys,
                                             double coverage) {
  using Key = std::tuple<int64_t, int32_t, int32_t, std::string, ModelMask>;
  std::map<Key, size_t> slot;  // key -> index in `order`
  std::vector<TargetClass> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const std::string model_key = model_keys.empty() ? std::string() : model_keys[i];
    Key key{r.cpu_milli, r.gpu_milli, r.gpu_count, model_key, model_keys.empty() ? r.allowed_models : 0};
    auto [it, inserted] = slot.emplace(key, order.size());
    if (inserted) order.push_back({r.cpu_milli, r.gpu_count, r.gpu_milli, r.allowed_models, 0, 0});
    ++order[it->second].count;
  }
  return from_classes(std::move(order), static_cast<int64_t>(requests.size()), coverage);
}

TargetWorkload TargetWorkload::from_classes(std::vector<TargetClass> order, int64_t total_count, double coverage) {
  std::stable_sort(order.begin(), order.end(),
                   [](const TargetClass& a, const TargetClass& b) { return a.count > b.count; });
  const double total = static_cast<double>(total_count);
  TargetWorkload w;
  int64_t kept = 0;
  for (const TargetClass& c : order) {
    if (!w.classes.empty() && static_cast<double>(kept) / total >= coverage) {
      w.tail.push_back(c);
      continue;
    }
    w.classes.push_back(c);
    kept += c.count;
  }
  // p_m = (count_m / total) / (kept / total), in that order (exact replay).
  for (TargetClass& c : w.classes)
    c.popularity = (static_cast<double>(c.count) / total) / (static_cast<double>(kept) / total);
  return w;
}

double node_fragmentation_milli(const TargetWorkload& target, GpuModelId model, int64_t cpu_free_milli,
                                std::span<const int32_t> gpu_free_milli) {
  int64_t free_total = 0;
  for (int32_t f : gpu_free_milli) free_total += f;
  if (free_total == 0) return 0.0;
  const double L = static_cast<double>(free_total);
  // Buckets in the reference order: Q1 GPU short + CPU short, Q2 GPU short
  // (or the unusable part of a hostable node), Q4 GPU fits + CPU short, XL/XR
  // CPU-only classes, NA model not allowed. Q3 (usable) is not fragmentation.
  double q1 = 0, q2 = 0, q4 = 0, xl = 0, xr = 0, na = 0;
  for (const TargetClass& m : target.classes) {
    const bool cpu_ok = cpu_free_milli >= m.cpu_milli;
    if (m.gpu_count == 0) {
      (cpu_ok ? xl : xr) += m.popularity * L;
      continue;
    }
    if (!model_allowed(m.allowed_models, model)) {
      na += m.popularity * L;
      continue;
    }
    const auto [fitting, below] = gpus_fitting(gpu_free_milli, m.gpu_milli);
    if (fitting < m.gpu_count) {
      (cpu_ok ? q2 : q1) += m.popularity * L;
    } else if (!cpu_ok) {
      q4 += m.popularity * L;
    } else {
      q2 += m.popularity * static_cast<double>(below);
    }
  }
  return q1 + q2 + q4 + xl + xr + na;
}

double node_fragmentation_milli(const TargetWorkload& target, const ClusterState& state, NodeId node) {
  return node_fragmentation_milli(target, state.gpu_model(node), state.cpu_free_milli(node),
                                  state.gpu_free_milli(node));
}

double cluster_fragmentation_milli(const TargetWorkload& target, const ClusterState& state) {
  double total = 0;
  for (int n = 0; n < state.node_count(); ++n) total += node_fragmentation_milli(target, state, NodeId{n});
  return total;
}

FragTracker::FragTracker(const TargetWorkload& target, const ClusterState& state)
    : target_(target), node_frag_(state.node_count()), version_(state.node_count()) {
  for (int n = 0; n < state.node_count(); ++n) {
    node_frag_[n] = node_fragmentation_milli(target_, state, NodeId{n});
    version_[n] = state.version(NodeId{n});
    total_ += node_frag_[n];
  }
}

void FragTracker::refresh(const ClusterState& state, NodeId node) {
  const size_t i = index(node);
  if (version_[i] == state.version(node)) return;
  const double f = node_fragmentation_milli(target_, state, node);
  total_ += f - node_frag_[i];
  node_frag_[i] = f;
  version_[i] = state.version(node);
}

}  // namespace gpupack
