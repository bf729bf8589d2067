#include "policy/fgd.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "policy/gpu_choice.h"

namespace gpupack {
namespace {

int32_t frag_delta_score(double delta_milli) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-delta_milli / 1000.0));
  return static_cast<int32_t>(100.0 * sigmoid);
}

}  // namespace

FgdPolicy::FgdPolicy(std::shared_ptr<const TargetWorkload> target) : target_(std::move(target)) {
  if (!target_) throw std::invalid_argument("fgd: a target workload is required");
}

double FgdPolicy::node_frag(const ClusterState& state, NodeId node) {
  const size_t i = index(node);
  if (frag_version_[i] != state.version(node)) {
    frag_[i] = node_fragmentation_milli(*target_, state, node);
    frag_version_[i] = state.version(node);
  }
  return frag_[i];
}

void FgdPolicy::prepare(const ClusterState& state, const Request& req) {
  const size_t nodes = static_cast<size_t>(state.node_count());
  if (frag_.size() != nodes) {
    frag_.assign(nodes, 0.0);
    frag_version_.assign(nodes, 0);
    cache_.clear();
    shape_index_.clear();
  }
  auto [it, inserted] = shape_index_.emplace(std::make_tuple(req.cpu_milli, req.gpu_count, req.gpu_milli),
                                             cache_.size());
  if (inserted) cache_.emplace_back(nodes);
  current_ = &cache_[it->second];
}

NodeScore FgdPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  Entry& e = (*current_)[index(node)];
  if (e.version == state.version(node)) return {e.score, e.gpu_mask};
  const double before = node_frag(state, node);
  // Same computation as evaluate(), reusing the cached F(n).
  const auto free = state.gpu_free_milli(node);
  const int64_t cpu_after = state.cpu_free_milli(node) - req.cpu_milli;
  const GpuModelId model = state.gpu_model(node);
  std::array<int32_t, kMaxGpusPerNode> after{};
  std::copy(free.begin(), free.end(), after.begin());
  const std::span<const int32_t> after_span(after.data(), free.size());
  NodeScore best{-1, 0};
  if (req.is_shared() && req.gpu_count == 1) {
    for (size_t g = 0; g < free.size(); ++g) {
      if (free[g] < req.gpu_milli) continue;
      bool seen = false;  // an earlier GPU with the same free value scores the same
      for (size_t h = 0; h < g && !seen; ++h) seen = free[h] == free[g];
      if (seen) continue;
      after[g] -= req.gpu_milli;
      const double delta = before - node_fragmentation_milli(*target_, model, cpu_after, after_span);
      after[g] += req.gpu_milli;
      const int32_t s = frag_delta_score(delta);
      if (s > best.score) best = {s, 1u << g};
    }
  } else {
    const uint32_t mask = choose_gpus_first_fit(free, req);
    for (size_t g = 0; g < free.size(); ++g)
      if ((mask >> g) & 1u) after[g] -= req.gpu_milli;
    const double delta = before - node_fragmentation_milli(*target_, model, cpu_after, after_span);
    best = {frag_delta_score(delta), mask};
  }
  e = {state.version(node), static_cast<int32_t>(best.score), best.gpu_mask};
  return best;
}

NodeScore FgdPolicy::evaluate(const ClusterState& state, NodeId node, const Request& req) const {
  FgdPolicy scratch(target_);
  scratch.prepare(state, req);
  return scratch.score(state, node, req);
}

}  // namespace gpupack
