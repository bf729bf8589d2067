// `gpupack policies`: the placement policies and defragmentation methods this
// build offers, each with its one-line summary (from the registries).
#include <fmt/format.h>

#include "cli/commands.h"
#include "defrag/methods.h"
#include "policy/registry.h"

namespace gpupack::cli {

void add_policies_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("policies", "list the placement policies and defragmentation methods");
  cmd->callback([] {
    fmt::print("placement policies (--policy):\n");
    for (const PolicyInfo& p : policy_table()) fmt::print("  {:<24} {}\n", p.name, p.summary);
    fmt::print("defragmentation methods (--defrag-method, defrag --method):\n");
    for (const DefragMethodInfo& m : defrag_method_table()) fmt::print("  {:<24} {}\n", m.name, m.summary);
  });
}

}  // namespace gpupack::cli
