// gpupack simulate --mode dynamic: flags and entry point (the logic lives in
// sim/dynamic_*). simulate.cc registers these flags on its subcommand and
// dispatches here when --mode is dynamic.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace gpupack::cli {

struct DynamicFlags {
  bool backfill = false, strict_fifo = false, preemption = false;
  int jobs = 2000;
  int gang_nodes = 64, gpus_per_node = 8, nodes_per_rack = 8;
  double arrival_scale = 1.0, interarrival_s = 110, no_estimate_fraction = 0.2, max_overestimate = 2.0;
  std::string racks, quota, gang_shapes;
  double defrag_every_min = 0;
  bool defrag_on_room = false;
};

// Registers the dynamic-only flags on `cmd`.
std::shared_ptr<DynamicFlags> add_dynamic_simulate_options(CLI::App& cmd);

struct SharedSimulateFlags {
  std::string nodes, pods, policy, seeds, out;
  std::string node_rank;  // --node-rank: exact tie-break ranks (node,rank CSV)
  bool quiet = false;
  double defrag_budget_fraction = 0.05;  // --defrag-budget, shared with the static mode
};
void run_dynamic_simulate(const DynamicFlags& d, const SharedSimulateFlags& f);

}  // namespace gpupack::cli
