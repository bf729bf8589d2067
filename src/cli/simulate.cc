#include <fmt/format.h>

#include "cli/commands.h"

namespace gpupack::cli {

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("simulate", "replay a workload against a cluster and compare policies");
  cmd->callback([] { fmt::print("simulate: not yet wired\n"); });
}

}  // namespace gpupack::cli
