// Policies by name: one table, from which everything else is derived.
//
// Contract:
// - policy_table() lists every built-in policy once, in the order reports
//   list them (the FGD paper's six first): its name (lower case), a one-line
//   summary, and its factory. The CLI's help text (policy_help()), the
//   `gpupack policies` listing, docs/ALGORITHMS.md's table (checked by a test)
//   and the tests' expectations all derive from this table; adding a policy is
//   one file plus one line in registry.cc plus its test.
// - make_policy() returns a fresh policy for a name, or throws
//   std::invalid_argument listing the known names. FGD needs
//   `options.target` (the expected workload); Random uses `options.seed`.
//   A name "<policy>+learned" (kLearnedSuffix), for a policy whose entry
//   has uses_target, is that policy with its target learned from the
//   requests it places (policy/learned_target.h); options.target is then
//   ignored.
// - register_policy() adds an entry at run time (plug-ins and test fixtures);
//   it throws std::invalid_argument for an empty or already used name. The
//   table is process-wide; registration is not thread-safe with lookups and
//   belongs at start-up.
#pragma once

#include <functional>
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

using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicyOptions&)>;

struct PolicyInfo {
  std::string name;     // what --policy takes
  std::string summary;  // one line: what the policy prefers
  PolicyFactory make;
  bool uses_target = false;  // reads options.target (can take "+learned")
};

inline constexpr std::string_view kLearnedSuffix = "+learned";

const std::vector<PolicyInfo>& policy_table();
void register_policy(PolicyInfo info);

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options);

// Every policy name, in table order.
std::vector<std::string> policy_names();
// "a, b, c": the names for help and error texts.
std::string policy_name_list();

}  // namespace gpupack
