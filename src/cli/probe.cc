// gpupack probe: free memory, largest allocatable block and external
// fragmentation of every visible GPU.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "alloc/alloc_config.h"
#include "alloc/cuda_driver.h"
#include "alloc/probe.h"
#include "cli/commands.h"
#include "util/files.h"

namespace gpupack::cli {
namespace {

struct ProbeFlags {
  std::string format = "table";
  std::string granularity = "2MiB";
  int max_steps = 64;
  int time_budget_ms = 2000;
  std::string driver_lib = "libcuda.so.1";
  std::string out;
};

void run_probe(const ProbeFlags& f) {
  ProbeOptions options;
  options.granularity_bytes = parse_bytes(f.granularity, "--granularity");
  if (options.granularity_bytes == 0) throw std::invalid_argument("--granularity: must be at least 1 byte");
  if (f.max_steps < 1) throw std::invalid_argument(fmt::format("--max-steps: {} is not >= 1", f.max_steps));
  if (f.time_budget_ms < 1)
    throw std::invalid_argument(fmt::format("--time-budget-ms: {} is not >= 1", f.time_budget_ms));
  options.max_steps = f.max_steps;
  options.time_budget = std::chrono::milliseconds(f.time_budget_ms);

  const ProbeRun run = probe_all_gpus(f.driver_lib, options);
  if (run.exit_code != 0) {
    fmt::print(stderr, "gpupack probe: {}\n", run.message);
    throw CLI::RuntimeError(run.exit_code);
  }
  std::string text;
  if (f.format == "json")
    text = format_probe_json(run.gpus);
  else if (f.format == "prom")
    text = format_probe_prom(run.gpus);
  else
    text = format_probe_table(run.gpus);
  if (f.out.empty()) {
    fmt::print("{}", text);
  } else {
    write_file_atomically(f.out, text);
  }
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto flags = std::make_shared<ProbeFlags>();
  auto* cmd = app.add_subcommand(
      "probe",
      "measure each GPU's free memory, largest allocatable block and external fragmentation (1 - largest/free)");
  cmd->footer(
      "Exit codes: 0 ok; 1 or >100 bad flags; 3 no CUDA driver (libcuda.so.1 cannot be loaded); "
      "4 driver present but no GPU visible; 5 a CUDA driver call failed.\n"
      "The search allocates and frees plain device memory (cuMemAlloc), one block at a time, never more than the "
      "free memory, within --max-steps tries and --time-budget-ms.\n");
  cmd->add_option("--format", flags->format, "table, json, or prom (Prometheus textfile format)")
      ->check(CLI::IsMember({"table", "json", "prom"}))
      ->capture_default_str();
  cmd->add_option("--granularity", flags->granularity, "search granularity (1 = exact bytes)")->capture_default_str();
  cmd->add_option("--max-steps", flags->max_steps, "at most this many allocation tries per GPU")->capture_default_str();
  cmd->add_option("--time-budget-ms", flags->time_budget_ms, "time bound per GPU")->capture_default_str();
  cmd->add_option("--driver-lib", flags->driver_lib, "CUDA driver library to load")->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "write to this file (atomically, for the node_exporter textfile collector)");
  cmd->callback([flags] { run_probe(*flags); });
}

}  // namespace gpupack::cli
