#include "policy/registry.h"

#include <fmt/format.h>

#include <stdexcept>

#include "policy/best_fit.h"
#include "policy/capfrag.h"
#include "policy/dot_product.h"
#include "policy/dualfrag.h"
#include "policy/fgd.h"
#include "policy/first_fit.h"
#include "policy/gpu_clustering.h"
#include "policy/gpu_packing.h"
#include "policy/learned_target.h"
#include "policy/poolfrag.h"
#include "policy/random.h"
#include "policy/spread.h"

namespace gpupack {
namespace {

template <class P>
PolicyFactory plain() {
  return [](const PolicyOptions&) { return std::make_unique<P>(); };
}

// The one list of built-in policies. Add a policy here, in its own file.
std::vector<PolicyInfo>& table() {
  static std::vector<PolicyInfo> t = {
      {"random", "a uniformly random feasible node (seeded)",
       [](const PolicyOptions& o) { return std::make_unique<RandomPolicy>(o.seed); }},
      {"dotprod", "free resources least aligned with the pod (Tetris dot product)", plain<DotProductPolicy>()},
      {"gpuclustering", "nodes already running pods of the same GPU shape", plain<GpuClusteringPolicy>()},
      {"gpupacking", "partly used GPUs first, then partly used nodes, free nodes last", plain<GpuPackingPolicy>()},
      {"bestfit", "the node left with the least free CPU and GPU", plain<BestFitPolicy>()},
      {"fgd", "the least growth of expected fragmentation for the target workload (FGD)",
       [](const PolicyOptions& o) { return std::make_unique<FgdPolicy>(o.target); }, true},
      {"firstfit", "the first feasible node in rank order", plain<FirstFitPolicy>()},
      {"spread", "the most free capacity left (Kubernetes LeastAllocated)", plain<SpreadPolicy>()},
      {"capfrag", "FGD, ties broken by the least growth of GPU capacity stranded by CPU and packing",
       [](const PolicyOptions& o) { return std::make_unique<CapFragPolicy>(o.target); }, true},
      {"poolfrag", "capfrag, with GPU models that constrained pods need kept for them among FGD's ties",
       [](const PolicyOptions& o) { return std::make_unique<PoolFragPolicy>(o.target); }, true},
      {"dualfrag", "poolfrag under the least packing loss priced by the target's fluid GPU packing",
       [](const PolicyOptions& o) { return make_dualfrag(o.target); }, true},
  };
  return t;
}

}  // namespace

const std::vector<PolicyInfo>& policy_table() { return table(); }

void register_policy(PolicyInfo info) {
  if (info.name.empty() || !info.make) throw std::invalid_argument("a policy needs a name and a factory");
  for (const PolicyInfo& p : table())
    if (p.name == info.name) throw std::invalid_argument(fmt::format("policy '{}' is already registered", info.name));
  table().push_back(std::move(info));
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const PolicyInfo& p : table()) names.push_back(p.name);
  return names;
}

std::string policy_name_list() {
  std::string out;
  for (const PolicyInfo& p : table()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options) {
  if (name.size() > kLearnedSuffix.size() && name.ends_with(kLearnedSuffix)) {
    const std::string_view inner = name.substr(0, name.size() - kLearnedSuffix.size());
    for (const PolicyInfo& p : table())
      if (p.name == inner) return std::make_unique<LearnedTargetPolicy>(p, options.seed);
    throw std::invalid_argument(
        fmt::format("unknown policy '{}' in '{}' (known: {})", inner, name, policy_name_list()));
  }
  for (const PolicyInfo& p : table())
    if (p.name == name) return p.make(options);
  throw std::invalid_argument(fmt::format("unknown policy '{}' (known: {})", name, policy_name_list()));
}

}  // namespace gpupack
