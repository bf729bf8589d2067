#include "policy/learned_target.h"

#include <stdexcept>

namespace gpupack {

LearnedTargetPolicy::LearnedTargetPolicy(const PolicyInfo& inner, uint64_t seed)
    : make_inner_(inner.make), seed_(seed), name_(inner.name + std::string(kLearnedSuffix)) {
  if (!inner.uses_target) throw std::invalid_argument("policy '" + inner.name + "' has no target workload to learn");
  target_ = std::make_shared<const TargetWorkload>();
  inner_ = make_inner_({seed_, target_});
}

void LearnedTargetPolicy::prepare(const ClusterState& state, const Request& req) {
  seen_.push_back(req);
  if (seen_.size() >= next_rebuild_) {
    target_ = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(seen_));
    inner_ = make_inner_({seed_, target_});
    next_rebuild_ = seen_.size() * 2;
    ++epoch_;
    inner_epoch_ = inner_->scoring_epoch();
  }
  inner_->prepare(state, req);
  if (inner_->scoring_epoch() != inner_epoch_) {  // the inner policy's scores changed too
    inner_epoch_ = inner_->scoring_epoch();
    ++epoch_;
  }
}

}  // namespace gpupack
