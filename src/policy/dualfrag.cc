#include "policy/dualfrag.h"

#include <string>

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
// dualfrag without key 3 (the whole-node reserve) or without key 1 (the
// packing loss), for the ablation in bench/RESULTS.md.
void register_variant(const std::string& name, const std::string& summary, CapFragPolicy::Options options) {
  register_policy(PolicyInfo{
      name, summary,
      [name, options](const PolicyOptions& po) { return std::make_unique<PoolFragPolicy>(po.target, options, name); },
      true});
}
const bool kVariantsRegistered = [] {
  register_variant("dualfrag-noreserve", "dualfrag without the whole-node reserve", {.packing_loss = true});
  register_variant("dualfrag-noloss", "dualfrag without the packing loss (poolfrag with the reserve)",
                   {.whole_node_reserve = true});
  return true;
}();
}  // namespace
#endif

}  // namespace gpupack
