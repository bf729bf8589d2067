// The dynamic simulator: jobs arrive, wait in the queue, run and leave.
//
// Contract:
// - Event-driven over integer seconds. At each event time, completions are
//   applied first, then arrivals are queued, then one scheduling pass walks
//   the queue in order (priority, then FIFO) under the queue mode:
//   kNoBlocking tries every job; kStrictFifo stops at the first job that does
//   not fit; kBackfill (EASY) computes a reservation for the first job that
//   does not fit and lets later jobs start only under the backfill rule
//   (sched/backfill.h). A job over its queue's quota is skipped. With
//   preemption on, a job that does not fit may evict lower-priority jobs
//   (sched/preemption.h); victims return to the queue in their original
//   place and restart from scratch when started again.
// - Retry policy: a job that does not fit waits and is retried in later
//   passes, but only once some node it could use (a node on which one of its
//   members fits) has gained resources since its last unrestricted try; jobs
//   that never start are counted (`never_ran`). The run ends when no event is
//   left.
// - Placement: every job goes through the GangPlacer (one-member jobs are a
//   single Scheduler decision with the active policy).
// - Defragmentation (DynamicOptions): plans of defrag/planner.h with the goal
//   "admit this job, all its pods or none" move pods of running single-pod
//   jobs (never gang pods); a moved pod keeps running (its start and end are
//   unchanged). Runs and moves are counted (`defrag_runs`, `defrag_moves`).
// - Recorded after each event time: allocated GPU milli, FGD fragmentation
//   (against `frag_target`), queue length, pending GPU milli, running jobs.
//   Per job: submit, start, end, evictions, whether it was backfilled.
// - Deterministic in its inputs. Cost per pass: O(queued jobs x freed nodes)
//   fit checks plus one placement search per job worth trying.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frag/fgd.h"
#include "model/node.h"
#include "policy/policy.h"
#include "sched/gang.h"
#include "sched/queue.h"
#include "sim/dynamic_workload.h"

namespace gpupack {

struct DynamicOptions {
  QueueMode mode = QueueMode::kNoBlocking;
  bool preemption = false;
  std::map<std::string, int64_t> quota_gpu_milli;  // per queue name
  std::vector<TopologyLevel> levels;               // gang domain preference
  // Every `defrag_every_s` seconds (0 = never) the defragmentation planner
  // (defrag/planner.h, goal: admit the job at the head of the queue, all its
  // pods or none) moves at most `defrag_budget_fraction` of the running
  // pods; pods of multi-pod gangs never move. Queued jobs are retried after
  // a plan that moved anything.
  int64_t defrag_every_s = 0;
  double defrag_budget_fraction = 0.05;
  // With `defrag_on_room`, in every pass the first job tried that does not
  // fit although the cluster's free GPU milli, CPU and memory summed over
  // nodes suffice gets the same planner (same budget) at once, and starts
  // if the moves made room; asked once per job and cluster change.
  bool defrag_on_room = false;
};

struct DynamicSample {
  int64_t time_s = 0;
  int64_t used_milli = 0;
  double frag_milli = 0;
  int queue_length = 0;
  int64_t pending_milli = 0;
  int running_jobs = 0;
};

struct JobOutcome {
  int64_t submit_s = 0;
  int64_t start_s = -1;  // last start; -1 = never ran
  int64_t end_s = -1;    // -1 = still running at the end, or never ran
  int64_t first_start_s = -1;
  int evictions = 0;
  bool backfilled = false;                  // started while another job held a reservation
  int reservations = 0;                     // passes in which it held the reservation
  int64_t reserved_start_s = -1;            // the first reservation's start time
  std::vector<Assignment> first_placement;  // per member at the first start (node kNoNode = not placed)
};

struct DynamicRunResult {
  std::string policy;
  int64_t capacity_milli = 0;
  std::vector<DynamicSample> samples;
  std::vector<JobOutcome> jobs;  // one per workload job, same order
  std::vector<std::string> node_names;
  int never_ran = 0;
  int preemptions = 0;  // plans applied
  int evicted_pods = 0;
  int backfilled_jobs = 0;
  int defrag_runs = 0;   // planner invocations
  int defrag_moves = 0;  // pods moved by them
  int64_t start_s = 0, end_s = 0;
  double mean_alloc_pct = 0;  // time-weighted over [start_s, end_s]
  double wall_seconds = 0;
};

DynamicRunResult run_dynamic(const std::vector<NodeSpec>& nodes, const DynamicWorkload& workload, Policy& policy,
                             std::vector<int64_t> node_rank, const TargetWorkload& frag_target,
                             const DynamicOptions& options);

}  // namespace gpupack
