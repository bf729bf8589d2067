// gpupack allocsim: replay an allocation trace (or a generated workload)
// through the caching-allocator model under several configurations.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloc/alloc_config.h"
#include "alloc/allocsim.h"
#include "alloc/trace_io.h"
#include "alloc/workload_gen.h"
#include "cli/commands.h"

namespace gpupack::cli {
namespace {

struct AllocsimFlags {
  std::string trace;
  std::string generate;
  std::uint64_t seed = 1;
  std::uint64_t steps = 2000;
  std::vector<std::string> configs;
  std::string cap = "80GiB";
  std::string out_dir;
  std::string write_trace;
  std::string format = "table";
  int device = 0;
  std::uint64_t sample_every = 0;
};

void run_allocsim(const AllocsimFlags& f) {
  if (f.trace.empty() == f.generate.empty()) {
    throw std::invalid_argument("allocsim: give exactly one of --trace FILE or --generate training|inference");
  }
  ReplayOptions options;
  options.device_total_bytes = parse_bytes(f.cap, "--cap");
  if (options.device_total_bytes == 0) throw std::invalid_argument("--cap: must be positive");
  options.sample_every = f.sample_every;
  // Parse every configuration before doing any work.
  std::vector<AllocConfig> configs;
  for (const std::string& text : f.configs.empty() ? default_comparison_configs() : f.configs) {
    const std::string value = text == "default" ? "" : text;
    try {
      configs.push_back(parse_alloc_conf(value));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--config '{}': {}", text, e.what()));
    }
  }
  const Trace trace =
      f.trace.empty() ? generate_workload(f.generate, f.seed, f.steps) : read_trace_file(f.trace, f.device);
  if (!f.write_trace.empty()) write_trace_csv(trace, f.write_trace);
  // Without an allocation there is nothing to compare: no table of zeros and
  // no recommendation drawn from it.
  const bool any_alloc = std::any_of(trace.events.begin(), trace.events.end(),
                                     [](const TraceEvent& e) { return e.action == TraceAction::kAlloc; });
  if (!any_alloc)
    throw std::invalid_argument(
        fmt::format("{}: no allocation in the trace: nothing to replay", f.trace.empty() ? "--generate" : f.trace));

  std::vector<ReplayResult> results;
  results.reserve(configs.size());
  for (const AllocConfig& c : configs) results.push_back(replay(trace, c, options));
  if (!f.out_dir.empty()) write_replay_outputs(results, f.out_dir);

  if (f.format == "json") {
    fmt::print("{}", format_comparison_json(results));
    return;
  }
  fmt::print("trace: {} events{}{}, device cap {:.2f} GiB\n", trace.events.size(),
             f.trace.empty() ? fmt::format(" (generated {}, seed {}, {} steps)", f.generate, f.seed, f.steps)
                             : fmt::format(" from {}", f.trace),
             trace.skipped_frees > 0 ? fmt::format(", {} frees without alloc skipped", trace.skipped_frees) : "",
             static_cast<double>(options.device_total_bytes) / static_cast<double>(kGiB));
  fmt::print("{}", format_comparison_table(results));
  std::string reason;
  const std::size_t best = recommend(results, &reason);
  const std::string name = results[best].summary.config.empty() ? "default" : results[best].summary.config;
  fmt::print("recommendation: PYTORCH_CUDA_ALLOC_CONF={} ({})\n", results[best].summary.config.empty() ? "\"\"" : name,
             reason);
  if (!f.out_dir.empty()) fmt::print("series.csv, summary.json and memory.svg written to {}\n", f.out_dir);
}

}  // namespace

void add_allocsim_command(CLI::App& app) {
  auto flags = std::make_shared<AllocsimFlags>();
  auto* cmd = app.add_subcommand(
      "allocsim",
      "replay an allocation trace through a model of PyTorch's CUDA caching allocator and compare configurations");
  cmd->add_option("--trace", flags->trace,
                  "trace file: .csv (time_us,action,id,size_bytes,stream), JSON {\"events\":[...]}, or a PyTorch "
                  "memory snapshot converted to JSON (device_traces)");
  cmd->add_option("--generate", flags->generate, "generate a workload instead: training or inference")
      ->check(CLI::IsMember({"training", "inference"}));
  cmd->add_option("--seed", flags->seed, "seed for --generate")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--steps", flags->steps, "steps for --generate (training steps / decode steps)")
      ->capture_default_str();
  cmd->add_option("--config", flags->configs,
                  "PYTORCH_CUDA_ALLOC_CONF string; repeat to compare (\"default\" or \"\" = defaults); without it a "
                  "standard set is compared");
  cmd->add_option("--cap", flags->cap, "device memory cap, e.g. 80GiB, 24GiB, 1073741824")->capture_default_str();
  cmd->add_option("--device", flags->device, "device index in a snapshot's device_traces")->capture_default_str();
  cmd->add_option("-o,--out", flags->out_dir, "write series.csv, summary.json and memory.svg into this directory");
  cmd->add_option("--write-trace", flags->write_trace, "also write the (generated or read) trace as CSV");
  cmd->add_option("--sample-every", flags->sample_every, "series sampling interval in events (0 = about 2000 points)");
  cmd->add_option("--format", flags->format, "what is printed: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([flags] { run_allocsim(*flags); });
}

}  // namespace gpupack::cli
