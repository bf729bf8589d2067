#include "policy/poolfrag.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gpupack {
namespace {

constexpr int64_t kSlackSteps = 1000;                     // key 2 per unit of slack
constexpr int64_t kSlackKeyMax = (int64_t{1} << 16) - 1;  // slack of 65.5 or more, infinite included
// With fresh_first the slack key has 15 bits: a slack of 32.767 or more.
constexpr int64_t kFreshSlackKeyMax = (int64_t{1} << 15) - 1;

}  // namespace

PoolFragPolicy::PoolFragPolicy(std::shared_ptr<const TargetWorkload> target)
    : PoolFragPolicy(std::move(target), CapFragPolicy::Options{}, "poolfrag") {}

PoolFragPolicy::PoolFragPolicy(std::shared_ptr<const TargetWorkload> target, CapFragPolicy::Options options,
                               std::string name, bool fresh_first)
    : target_(target ? std::move(target) : throw std::invalid_argument(name + ": a target workload is required")),
      name_(std::move(name)),
      capfrag_(target_, options, name_),
      fresh_first_(fresh_first) {}

bool PoolFragPolicy::pools_stale(const ClusterState& state) const {
  return node_count_ != state.node_count() || pools_stamp_ != state.tie_order_stamp();
}

void PoolFragPolicy::refresh_pools(const ClusterState& state) {
  node_count_ = state.node_count();
  pools_stamp_ = state.tie_order_stamp();
  std::array<double, kMaxGpuModels> cap{};
  double total = 0;
  present_ = 0;
  for (int n = 0; n < state.node_count(); ++n) {
    const NodeId id{n};
    if (state.gpu_count(id) == 0) continue;
    cap[state.gpu_model(id)] += double{kGpuMilliPerGpu} * state.gpu_count(id);
    total += double{kGpuMilliPerGpu} * state.gpu_count(id);
    present_ |= model_bit(state.gpu_model(id));
  }
  // The whole workload, its rare classes (FGD's tail) included: a model
  // that only rare classes need is still needed.
  const std::vector<TargetClass> all = target_->all_classes();
  double demand = 0;
  for (const TargetClass& m : all) demand += double(m.count) * m.gpu_count * m.gpu_milli;
  std::array<double, kMaxGpuModels> rate{};  // r_P
  for (const TargetClass& m : all) {
    const ModelMask mask = m.allowed_models & present_;
    if (m.gpu_count == 0 || m.allowed_models == 0 || mask == 0 || mask == present_) continue;
    double mask_cap = 0;
    for (size_t q = 0; q < kMaxGpuModels; ++q)
      if ((mask >> q) & 1u) mask_cap += cap[q];
    const double share = double(m.count) * m.gpu_count * m.gpu_milli / demand;
    for (size_t q = 0; q < kMaxGpuModels; ++q)
      if ((mask >> q) & 1u) rate[q] += share * cap[q] / mask_cap;
  }
  for (size_t q = 0; q < kMaxGpuModels; ++q) {
    if (cap[q] == 0) {
      slack_[q] = 0;
    } else {
      slack_[q] = rate[q] > 0 ? (cap[q] / total) / rate[q] : std::numeric_limits<double>::infinity();
    }
    key_[q] = std::isinf(slack_[q]) ? kSlackKeyMax
                                    : std::clamp<int64_t>(std::llround(slack_[q] * kSlackSteps), 0, kSlackKeyMax);
  }
}

double PoolFragPolicy::pool_slack(const ClusterState& state, GpuModelId model) {
  if (pools_stale(state)) refresh_pools(state);
  return slack_[model];
}

void PoolFragPolicy::prepare(const ClusterState& state, const Request& req) {
  if (pools_stale(state)) refresh_pools(state);
  capfrag_.prepare(state, req);
  steer_ = false;
  fresh_ = false;
  if (capfrag_.scores_by_fgd() || req.gpu_count == 0) return;
  fresh_ = fresh_first_ && req.gpu_milli > 0 && req.gpu_milli < kGpuMilliPerGpu;
  const ModelMask mask = req.allowed_models == 0 ? present_ : req.allowed_models & present_;
  if (std::popcount(mask) < 2) return;
  for (size_t q = 0; q < kMaxGpuModels && !steer_; ++q)
    steer_ = ((mask >> q) & 1u) && key_[q] != key_[std::countr_zero(mask)];
}

NodeScore PoolFragPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  NodeScore s = capfrag_.score(state, node, req);
  // capfrag leaves the field between the reserve's key and S at 0 for this key.
  if (!fresh_first_) {
    if (steer_) s.score += key_[state.gpu_model(node)] << CapFragPolicy::kSlackKeyShift;
    return s;
  }
  const int64_t slack = steer_ ? std::min(key_[state.gpu_model(node)], kFreshSlackKeyMax) : 0;
  // A fully free node, for a pod CPU-heavy there: more CPU per GPU milli
  // than the node has per GPU.
  const bool fresh =
      fresh_ && state.fully_free(node) &&
      req.cpu_milli * state.gpu_count(node) * kGpuMilliPerGpu > state.cpu_total_milli(node) * req.gpu_milli;
  s.score += ((slack << 1) | int64_t{fresh}) << CapFragPolicy::kSlackKeyShift;
  return s;
}

}  // namespace gpupack
