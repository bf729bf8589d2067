#include "policy/dualfrag.h"

#include "policy/poolfrag.h"

namespace gpupack {

std::unique_ptr<Policy> make_dualfrag(std::shared_ptr<const TargetWorkload> target) {
  CapFragPolicy::Options options;
  options.packing_loss = true;
  return std::make_unique<PoolFragPolicy>(std::move(target), options, "dualfrag");
}

}  // namespace gpupack
