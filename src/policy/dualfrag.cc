#include "policy/dualfrag.h"

#include <string>

#include "policy/poolfrag.h"
#include "policy/registry.h"

namespace gpupack {

std::unique_ptr<Policy> make_dualfrag(std::shared_ptr<const TargetWorkload> target) {
  CapFragPolicy::Options options;
  options.packing_loss = true;
  options.whole_node_reserve = true;
  return std::make_unique<PoolFragPolicy>(std::move(target), options, "dualfrag", /*fresh_first=*/true);
}

#ifdef GPUPACK_CAPFRAG_ABLATION
namespace {
// dualfrag without key 3 (the whole-node reserve), key 1 (the packing loss)
// or key 5 (a fully free node first), for the ablation in bench/RESULTS.md.
void register_variant(const std::string& name, const std::string& summary, CapFragPolicy::Options options,
                      bool fresh_first = true) {
  register_policy(PolicyInfo{name, summary,
                             [name, options, fresh_first](const PolicyOptions& po) {
                               return std::make_unique<PoolFragPolicy>(po.target, options, name, fresh_first);
                             },
                             true});
}
const bool kVariantsRegistered = [] {
  register_variant("dualfrag-noreserve", "dualfrag without the whole-node reserve", {.packing_loss = true});
  register_variant("dualfrag-noloss", "dualfrag without the packing loss (poolfrag with the reserve)",
                   {.whole_node_reserve = true});
  register_variant("dualfrag-nofresh", "dualfrag without the fully free node first for shared pods",
                   {.packing_loss = true, .whole_node_reserve = true}, false);
  return true;
}();
}  // namespace
#endif

}  // namespace gpupack
