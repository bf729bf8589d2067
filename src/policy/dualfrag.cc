#include "policy/dualfrag.h"

#include "policy/poolfrag.h"
#include "policy/registry.h"

namespace gpupack {

std::unique_ptr<Policy> make_dualfrag(std::shared_ptr<const TargetWorkload> target) {
  CapFragPolicy::Options options;
  options.packing_loss = true;
  options.whole_node_reserve = true;
  return std::make_unique<PoolFragPolicy>(std::move(target), options, "dualfrag");
}

#ifdef GPUPACK_CAPFRAG_ABLATION
namespace {
// dualfrag without key 3 (the whole-node reserve) and without key 1 (the
// packing loss), for the ablation in bench/RESULTS.md.
const bool kNoReserveRegistered = [] {
  register_policy(PolicyInfo{"dualfrag-noreserve", "dualfrag without the whole-node reserve",
                             [](const PolicyOptions& po) {
                               CapFragPolicy::Options options;
                               options.packing_loss = true;
                               return std::make_unique<PoolFragPolicy>(po.target, options, "dualfrag-noreserve");
                             },
                             true});
  register_policy(PolicyInfo{"dualfrag-noloss", "dualfrag without the packing loss (poolfrag with the reserve)",
                             [](const PolicyOptions& po) {
                               CapFragPolicy::Options options;
                               options.whole_node_reserve = true;
                               return std::make_unique<PoolFragPolicy>(po.target, options, "dualfrag-noloss");
                             },
                             true});
  return true;
}();
}  // namespace
#endif

}  // namespace gpupack
