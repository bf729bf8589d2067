#include "policy/capfrag.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "policy/gpu_choice.h"
#include "policy/gpu_scan.h"

namespace gpupack {
namespace {

double weight_sum(const std::vector<int64_t>& w) {
  int64_t sum = 0;
  for (int64_t x : w) sum += x;
  return sum > 0 ? static_cast<double>(sum) : 1.0;
}

// trunc(100 x sigmoid(d / 1000)), d in milli: FGD's score.
int64_t sigmoid_score(double delta_milli) {
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(-delta_milli / 1000.0)));
}

}  // namespace

CapFragPolicy::CapFragPolicy(std::shared_ptr<const TargetWorkload> target, Options options, std::string name)
    : target_(std::move(target)), options_(options), name_(std::move(name)), fallback_(target_) {
  if (!target_) throw std::invalid_argument(name_ + ": a target workload is required");
  weights_ = class_weights(*target_, options_.weight);
  fgd_weights_ = class_weights(*target_, ClassWeight::kPods);
  weight_sum_ = weight_sum(weights_);
  fgd_weight_sum_ = weight_sum(fgd_weights_);
  if (options_.packing_loss) {
    if (!options_.fgd_first) throw std::invalid_argument(name_ + ": the packing loss needs FGD's key below it");
    prices_ = PackingPrices(*target_);
  }
  if (options_.whole_node_reserve) {
    if (!options_.fgd_first) throw std::invalid_argument(name_ + ": the whole-node reserve needs FGD's key above it");
    reserve_ = WholeNodeReserve(*target_);
  }
  fused_ = options_.fgd_first && weights_ == fgd_weights_ && !options_.one_pod && options_.cpu_capacity;
  if (fused_) pair_ = StrandedPairEvaluator(*target_, weights_);
}

bool CapFragPolicy::rescored_nodes(uint64_t since, std::vector<NodeId>* out) const {
  if (epoch_ == 0 || since != epoch_ - 1) return false;
  out->insert(out->end(), flipped_nodes_.begin(), flipped_nodes_.end());
  return true;
}

int64_t CapFragPolicy::node_stranded(const ClusterState& state, NodeId node) const {
  return capacity_fragmentation(*target_, weights_, state.gpu_model(node), state.cpu_free_milli(node),
                                state.gpu_free_milli(node), options_.one_pod, options_.cpu_capacity);
}

void CapFragPolicy::refresh(const ClusterState& state, NodeId node) {
  const size_t i = index(node);
  if (frag_version_[i] == state.version(node)) return;
  if (fused_) {
    const StrandedPair p = pair_(state.gpu_model(node), state.cpu_free_milli(node), state.gpu_free_milli(node));
    frag_[i] = p.capacity;
    fgd_frag_[i] = p.one_pod;
  } else {
    frag_[i] = node_stranded(state, node);
    if (options_.fgd_first)
      fgd_frag_[i] = capacity_fragmentation(*target_, fgd_weights_, state.gpu_model(node), state.cpu_free_milli(node),
                                            state.gpu_free_milli(node),
                                            /*one_pod=*/true, /*cpu_capacity=*/false);
  }
  frag_version_[i] = state.version(node);
}

int64_t CapFragPolicy::evaluate_after(const ClusterState& state, NodeId node, int64_t cpu_after,
                                      std::span<const int32_t> after, int64_t free_after) const {
  const size_t i = index(node);
  const GpuModelId model = state.gpu_model(node);
  const int64_t cap = int64_t{state.gpu_count(node)} * kGpuMilliPerGpu;
  // Key 3 in 0..1023: less free GPU share left scores higher.
  const int64_t fit = options_.tie_break && cap > 0 ? 1023 - free_after * 1023 / cap : 0;
  int64_t ds = 0, df = 0;
  if (fused_) {
    const StrandedPair p = pair_(model, cpu_after, after);
    ds = frag_[i] - p.capacity;
    df = fgd_frag_[i] - p.one_pod;
  } else {
    ds = frag_[i] -
         capacity_fragmentation(*target_, weights_, model, cpu_after, after, options_.one_pod, options_.cpu_capacity);
    if (options_.fgd_first)
      df = fgd_frag_[i] - capacity_fragmentation(*target_, fgd_weights_, model, cpu_after, after,
                                                 /*one_pod=*/true, /*cpu_capacity=*/false);
  }
  if (!options_.fgd_first) {
    const int64_t key = options_.coarse_score ? sigmoid_score(static_cast<double>(ds) / weight_sum_) : ds;
    return key * 1024 + fit;
  }
  // df: FGD's F over the same classes, as an exact integer (F x sum count).
  const int64_t key1 = sigmoid_score(static_cast<double>(df) / fgd_weight_sum_);  // 0..100
  // Key 2 in milli, bounded by the node's GPU milli (|dS / sum w| <= L <= 32,000).
  constexpr int64_t kHalf = int64_t{1} << 15;
  const int64_t key2 =
      std::clamp<int64_t>(std::llround(static_cast<double>(ds) / weight_sum_) + kHalf, 0, 2 * kHalf - 1);
  const int64_t fgd_key = options_.fgd_key ? key1 : 0;
  const int64_t reserve_key = options_.whole_node_reserve && !reserve_.reserved(state, node) ? 1 : 0;
  const int64_t low =
      (reserve_key << kReserveKeyShift) + ((options_.stranded_key ? key2 : 0) << kStrandedKeyShift) + fit;
  if (!options_.packing_loss) return (fgd_key << kFgdKeyShift) + low;
  // The packing loss of the GPUs the pod takes, in thousandths of a GPU;
  // less loss scores higher.
  const auto before = state.gpu_free_milli(node);
  double loss = 0;
  for (size_t g = 0; g < after.size(); ++g) loss += prices_.loss(before[g], after[g]);
  const int64_t loss_key = kLossKeyMax - std::clamp<int64_t>(std::llround(loss * 1000.0), 0, kLossKeyMax);
  if (options_.loss_under_fgd) return (fgd_key << kFgdAboveLossShift) + (loss_key << kLossUnderFgdShift) + low;
  return (loss_key << kLossKeyShift) + (fgd_key << kFgdKeyShift) + low;
}

void CapFragPolicy::prepare(const ClusterState& state, const Request& req) {
  const size_t nodes = static_cast<size_t>(state.node_count());
  if (frag_.size() != nodes) {
    frag_.assign(nodes, 0);
    fgd_frag_.assign(nodes, 0);
    frag_version_.assign(nodes, 0);
    cache_.clear();
    shape_index_.clear();
    has_hardware_nodes_ = false;
    for (int n = 0; n < state.node_count(); ++n) has_hardware_nodes_ |= state.has_hardware_setup(NodeId{n});
  }
  if (options_.whole_node_reserve && reserve_.update(state)) {
    // The held nodes changed: their cached scores are stale, and so are the
    // scheduler's class scores (scoring_epoch), which it then reads again
    // from this cache.
    ++epoch_;
    flipped_nodes_.clear();
    reserve_.for_each_flipped(state, [&](NodeId n) {
      for (auto& shape : cache_) shape[index(n)].version = 0;
      flipped_nodes_.push_back(n);
    });
  }
  use_fallback_ = has_hardware_nodes_ || !req.is_plain();
  if (use_fallback_) {
    fallback_.prepare(state, req);
    return;
  }
  auto [it, inserted] =
      shape_index_.emplace(std::make_tuple(req.cpu_milli, req.gpu_count, req.gpu_milli), cache_.size());
  if (inserted) cache_.emplace_back(nodes);
  current_ = &cache_[it->second];
}

NodeScore CapFragPolicy::score(const ClusterState& state, NodeId node, const Request& req) {
  if (use_fallback_) return fallback_.score(state, node, req);
  Entry& e = (*current_)[index(node)];
  if (e.version == state.version(node)) return {e.score, e.gpu_mask};
  refresh(state, node);
  const auto free = state.gpu_free_milli(node);
  const int64_t cpu_after = state.cpu_free_milli(node) - req.cpu_milli;
  const int64_t free_after = state.gpu_free_total_milli(node) - req.total_gpu_milli();
  const NodeScore best = best_gpus_by_score(
      free, req, std::numeric_limits<int64_t>::min(),
      [&](std::span<const int32_t> after) { return evaluate_after(state, node, cpu_after, after, free_after); });
  e = {state.version(node), best.score, best.gpu_mask};
  return best;
}

std::vector<PolicyInfo> capfrag_ablation() {
  using O = CapFragPolicy::Options;
  const auto make = [](std::string name, std::string what, O o) {
    return PolicyInfo{
        name, std::move(what),
        [name, o](const PolicyOptions& po) { return std::make_unique<CapFragPolicy>(po.target, o, name); }, true};
  };
  std::vector<PolicyInfo> v;
  v.push_back(make("capfrag-fgdtb", "FGD, then best fit (keys 1, 3)",
                   O{.fgd_first = false, .one_pod = true, .cpu_capacity = false, .coarse_score = true}));
  v.push_back(make("capfrag-notb", "capfrag without key 3", O{.tie_break = false}));
  v.push_back(make("capfrag-nocpu", "capfrag, S without CPU capacity", O{.cpu_capacity = false}));
  v.push_back(make("capfrag-demand", "capfrag, S weighted by GPU demand", O{.weight = ClassWeight::kDemand}));
  v.push_back(make("capfrag-sonly", "S alone, exact (keys 2, 3)", O{.fgd_first = false}));
  v.push_back(make("capfrag-ssig", "S alone through FGD's sigmoid", O{.fgd_first = false, .coarse_score = true}));
  v.push_back(
      make("capfrag-sdemand", "S alone, demand weights, exact", O{.fgd_first = false, .weight = ClassWeight::kDemand}));
  v.push_back(make("capfrag-fgdexact", "FGD's F, exact (no sigmoid), best fit",
                   O{.fgd_first = false, .one_pod = true, .cpu_capacity = false}));
  // dualfrag's ingredients (policy/dualfrag.h): the same keys on capfrag,
  // whole-node reserve included, without poolfrag's slack key ("-cap"), and
  // with one key moved or left out.
  v.push_back(
      make("dualfrag-cap", "dualfrag without the pool slack key", O{.packing_loss = true, .whole_node_reserve = true}));
  v.push_back(make("dualfrag-under", "the packing loss under FGD's key, no pool slack",
                   O{.packing_loss = true, .loss_under_fgd = true, .whole_node_reserve = true}));
  v.push_back(make("dualfrag-nofgd", "the packing loss, then the reserve, S and best fit, no pool slack",
                   O{.packing_loss = true, .fgd_key = false, .whole_node_reserve = true}));
  v.push_back(make("dualfrag-nos", "the packing loss, FGD, the reserve, best fit, no pool slack",
                   O{.packing_loss = true, .stranded_key = false, .whole_node_reserve = true}));
  v.push_back(make("dualfrag-nofit", "the packing loss, FGD, the reserve, S, no pool slack",
                   O{.tie_break = false, .packing_loss = true, .whole_node_reserve = true}));
  return v;
}

#ifdef GPUPACK_CAPFRAG_ABLATION
namespace {
const bool kAblationRegistered = [] {
  for (PolicyInfo& info : capfrag_ablation()) register_policy(std::move(info));
  return true;
}();
}  // namespace
#endif

}  // namespace gpupack
