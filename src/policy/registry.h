// Policies by name.
//
// Contract: make_policy() returns a fresh policy for the lower-case name
// (random, dotprod, gpuclustering, gpupacking, bestfit, fgd, firstfit,
// spread) or throws std::invalid_argument listing the known names. FGD needs
// `options.target` (the expected workload); Random uses `options.seed`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frag/fgd.h"
#include "policy/policy.h"

namespace gpupack {

struct PolicyOptions {
  uint64_t seed = 42;
  std::shared_ptr<const TargetWorkload> target;
};

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options);

// Every policy name, in the order reports list them (the FGD paper's six first).
const std::vector<std::string>& policy_names();

}  // namespace gpupack
