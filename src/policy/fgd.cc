#include "policy/fgd.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "mig/mig_slot_choice.h"
#include "policy/gpu_choice.h"
#include "policy/gpu_scan.h"

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
  plain_request_ = req.is_plain();
  if (!plain_request_) return;  // hardware requests are scored uncached
  auto [it, inserted] =
      shape_index_.emplace(std::make_tuple(req.cpu_milli, req.gpu_count, req.gpu_milli), cache_.size());
  if (inserted) cache_.emplace_back(nodes);
  current_ = &cache_[it->second];
}

// F(n) of a node with hardware setup, optionally after `where` (for `req`).
static double hardware_frag(const TargetWorkload& target, const ClusterState& state, NodeId node, const Request& req,
                            const Assignment* where) {
  std::array<int32_t, kMaxGpusPerNode> free{};
  size_t plain_gpus = 0;
  double mig_frag = 0;
  const auto gpu_free = state.gpu_free_milli(node);
  for (int g = 0; g < state.gpu_count(node); ++g) {
    const bool used = where && ((where->gpu_mask >> g) & 1u);
    if (const MigGpuState* mig = state.mig_state(node, g)) {
      const MigTargetMix& mix = default_mig_mix(mig->geometry());
      if (used && !state.mig_fixed_layout(node, g)) {
        MigGpuState after = *mig;
        after.place(where->mig_profile, where->mig_start);
        mig_frag += mig_fragmentation_milli(after, mix);
      } else {
        mig_frag += mig_fragmentation_milli(*mig, mix);
      }
      continue;
    }
    int32_t f = gpu_free[static_cast<size_t>(g)];
    if (used) f -= state.gpu_charge_milli(node, g, req, *where);
    free[plain_gpus++] = f;
  }
  const int64_t cpu = state.cpu_free_milli(node) - (where ? req.cpu_milli : 0);
  return node_fragmentation_milli(target, state.gpu_model(node), cpu,
                                  std::span<const int32_t>(free.data(), plain_gpus)) +
         mig_frag;
}

NodeScore FgdPolicy::hardware_score(const ClusterState& state, NodeId node, const Request& req) const {
  const Placement p = choose_placement(state, node, req);
  if (!p.ok()) return {0, 0};
  const double delta =
      hardware_frag(*target_, state, node, req, nullptr) - hardware_frag(*target_, state, node, req, &p.assignment);
  return {frag_delta_score(delta), p.assignment.gpu_mask};
}

NodeScore FgdPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  if (!plain_request_ || state.has_hardware_setup(node)) return hardware_score(state, node, req);
  Entry& e = (*current_)[index(node)];
  if (e.version == state.version(node)) return {e.score, e.gpu_mask};
  const double before = node_frag(state, node);
  // Same computation as evaluate(), reusing the cached F(n).
  const auto free = state.gpu_free_milli(node);
  const int64_t cpu_after = state.cpu_free_milli(node) - req.cpu_milli;
  const GpuModelId model = state.gpu_model(node);
  const NodeScore best = best_gpus_by_score(free, req, -1, [&](std::span<const int32_t> after) -> int64_t {
    return frag_delta_score(before - node_fragmentation_milli(*target_, model, cpu_after, after));
  });
  e = {state.version(node), static_cast<int32_t>(best.score), best.gpu_mask};
  return best;
}

NodeScore FgdPolicy::evaluate(const ClusterState& state, NodeId node, const Request& req) const {
  FgdPolicy scratch(target_);
  scratch.prepare(state, req);
  return scratch.score(state, node, req);
}

}  // namespace gpupack
