// gpupack command-line entry point.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "alloc/alloc_config.h"
#include "cli/commands.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/version.h"

int main(int argc, char** argv) {
  CLI::App app{"gpupack: pack GPU workloads onto GPUs and nodes with little stranded capacity"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpupack " + std::string(gpupack::kVersion));
  // Global: the size cap of every input file (before or after the subcommand).
  app.fallthrough();
  app.add_option_function<std::string>(
      "--max-input-bytes",
      [](const std::string& v) { gpupack::set_max_input_bytes(gpupack::parse_bytes(v, "--max-input-bytes")); },
      "largest input file any reader accepts, e.g. 4GiB (default 1GiB)");
  gpupack::cli::add_simulate_command(app);
  gpupack::cli::add_allocsim_command(app);
  gpupack::cli::add_probe_command(app);
  gpupack::cli::add_config_command(app);
  gpupack::cli::add_defrag_command(app);
  gpupack::cli::add_serve_command(app);
  gpupack::cli::add_analyze_command(app);
  gpupack::cli::add_mig_plan_command(app);
  gpupack::cli::add_hw_experiment_command(app);
  gpupack::cli::add_policies_command(app);
  // An unknown first word is a mistyped command: say so, suggest the
  // nearest one, exit 2 (CLI11 alone would say "A subcommand is required").
  if (argc >= 2 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      const std::string near = gpupack::nearest_name(word, names);
      fmt::print(stderr, "gpupack: unknown command '{}'{}\nCommands: {}\nRun 'gpupack --help' for more.\n", word,
                 near.empty() ? "" : fmt::format(", did you mean '{}'?", near), fmt::join(names, ", "));
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // --help and --version are successes; a command's own exit code
    // (CLI::RuntimeError, e.g. probe's 3 and 4) stands; every usage error exits 2.
    if (rc == 0 || dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) return rc;
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "gpupack: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
