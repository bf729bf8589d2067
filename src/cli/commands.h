// gpupack subcommands. Each add_*_command registers one subcommand (its flags
// and its callback) on the root app; cli/ only parses flags and prints.
#pragma once

#include <CLI/CLI.hpp>

namespace gpupack::cli {

void add_simulate_command(CLI::App& app);
void add_allocsim_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_defrag_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_analyze_command(CLI::App& app);
void add_mig_plan_command(CLI::App& app);
void add_hw_experiment_command(CLI::App& app);
void add_policies_command(CLI::App& app);

}  // namespace gpupack::cli
