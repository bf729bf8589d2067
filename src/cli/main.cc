// gpupack command-line entry point.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "alloc/alloc_config.h"
#include "cli/commands.h"
#include "util/files.h"

int main(int argc, char** argv) {
  CLI::App app{"gpupack: pack GPU workloads onto GPUs and nodes with little stranded capacity"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpupack 0.1.0");
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gpupack: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
