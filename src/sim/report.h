// Reports of a static experiment: comparison table, curves.csv,
// summary.json, allocation.svg and placements.csv.
//
// Contract: `summarize()` groups runs by policy (in first-seen order) and
// averages over seeds. Writers create or overwrite one file each and throw
// std::runtime_error naming the path when it cannot be written. Formats are
// documented in docs/REPORTS.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/workload.h"
#include "sim/curves.h"
#include "sim/static_experiment.h"

namespace gpupack {

struct PolicySummary {
  std::string policy;
  int seeds = 0;
  Curve mean;  // over seeds
  double mean_failed_pods = 0;
  double mean_arrivals = 0;
  double mean_wall_seconds = 0;
  double mean_final_alloc_pct = 0;
  // Mean of the runs' size_waste_milli in % of capacity: the free capacity
  // the placed pods' sizes force. Set when every run has it.
  std::optional<double> mean_size_waste_pct;
  // Set when the runs defragmented after their arrivals (means over seeds).
  bool has_defrag = false;
  double mean_alloc_pct_before_defrag = 0;
  double mean_alloc_pct_after_defrag = 0;
  double mean_moves = 0;
  double mean_running_pods = 0;
  double mean_defrag_admitted_pods = 0;
  double mean_defrag_seconds = 0;
};

std::vector<PolicySummary> summarize(const std::vector<StaticRunResult>& runs);

// Allocation % at 90/100/110/130 % arrived, fragmentation % at 130, failed
// pods and wall time per run; the best policy at 130 % is marked.
std::string format_comparison_table(const std::vector<PolicySummary>& summary);

// Per policy: allocation before/after defragmentation, moves (and the
// budget), pods admitted and planning time; empty when no run defragmented.
std::string format_defrag_table(const std::vector<PolicySummary>& summary);

void write_curves_csv(const std::string& path, const std::vector<StaticRunResult>& runs);
// `mix_packing_bound_pct`: frag/packing_prices.h's bound for the workload
// (written as null when unknown).
void write_summary_json(const std::string& path, const std::vector<StaticRunResult>& runs,
                        const std::vector<PolicySummary>& summary, const std::string& cluster_label,
                        const std::string& workload_label, double tune,
                        std::optional<double> mix_packing_bound_pct = std::nullopt);
void write_allocation_svg(const std::string& path, const std::vector<PolicySummary>& summary, const std::string& title);
// The same chart as text; and fragmentation (% of capacity) vs arrived.
std::string allocation_svg(const std::vector<PolicySummary>& summary, const std::string& title);
std::string fragmentation_svg(const std::vector<PolicySummary>& summary, const std::string& title);
// One row per arrival: policy,idx,pod,node,gpus (GPU indices joined by '|';
// node empty for a failed pod). `arrival_pods[i]` names arrival i.
void write_placements_csv(const std::string& path, const std::vector<StaticRunResult>& runs,
                          const std::vector<std::string>& node_names, const std::vector<std::string>& arrival_pods);

}  // namespace gpupack
