// Reports of dynamic runs: per-run summary (utilisation, waiting times by
// job size, gang wait, job completion time, starvation), a comparison table,
// series.csv, summary.json and an SVG chart over time.
//
// Contract: summarize_dynamic() is pure. Percentiles are nearest-rank over
// the jobs that started (wait = first start - submit; JCT = end - submit
// over the jobs that ended). Starvation is the longest wait of any job,
// counting a job that never ran as waiting until the end of the run. Size
// classes are by the job's total GPU request: cpu, shared (< 1 GPU), 1, 2-4,
// 5-8, 9-32, 33+ GPUs. Writers create or overwrite one file and throw
// std::runtime_error naming the path when it cannot be written; formats are
// in docs/DYNAMIC.md.
#pragma once

#include <string>
#include <vector>

#include "sim/dynamic_sim.h"

namespace gpupack {

struct WaitStats {
  int jobs = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, p99_s = 0;
};

struct DynamicSummary {
  std::string label;  // e.g. "fgd", "fgd+backfill"
  int jobs = 0, gangs = 0, never_ran = 0, backfilled = 0, preemptions = 0, evicted_pods = 0;
  int defrag_runs = 0, defrag_moves = 0;
  double mean_alloc_pct = 0, peak_alloc_pct = 0, mean_frag_pct = 0;
  double mean_queue_length = 0;  // time-weighted
  int max_queue_length = 0;
  WaitStats wait, gang_wait, jct;
  std::vector<std::pair<std::string, WaitStats>> wait_by_size;  // classes with jobs only
  int64_t longest_wait_s = 0;
  std::string longest_wait_job;
  int64_t makespan_s = 0;
  double wall_seconds = 0;
};

std::string size_class(const DynamicJob& job);
WaitStats wait_stats(std::vector<int64_t> values);
DynamicSummary summarize_dynamic(const DynamicRunResult& run, const DynamicWorkload& workload,
                                 const std::string& label);

std::string format_dynamic_table(const std::vector<DynamicSummary>& rows);

// time_s,run,alloc_pct,frag_pct,queue_length,pending_gpu_milli,running_jobs
void write_dynamic_series_csv(const std::string& path, const std::vector<DynamicRunResult>& runs,
                              const std::vector<std::string>& labels);
void write_dynamic_summary_json(const std::string& path, const std::vector<DynamicSummary>& rows,
                                const std::string& cluster_label, const std::string& workload_label);
// run,job,pod,node,gpus,start_s: each job member where the job first
// started (node and gpus empty when it never ran or that member was left
// out), jobs in workload order; gpus as GPU indices joined by '|'.
struct DynamicExperimentRun;
void write_dynamic_placements_csv(const std::string& path, const std::vector<DynamicExperimentRun>& runs);
// Two panels over time: GPU allocation % and queue length, one line per run.
void write_dynamic_svg(const std::string& path, const std::vector<DynamicRunResult>& runs,
                       const std::vector<std::string>& labels, const std::string& title);

}  // namespace gpupack
