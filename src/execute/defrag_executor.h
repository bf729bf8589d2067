// The executor of a defragmentation plan on a live cluster (`gpupack defrag
// --apply`): each move carried out through the Kubernetes API, step by step,
// with a journal that survives the executor being killed.
//
// Contract:
// - make_journal() turns a plan (defrag/plan.h, PodId i = pods[i]) into a
//   journal: per step the pod (namespace, name, UID), its controller, from
//   and to node, the target GPUs (gpupack.io/assigned-gpus form) and the
//   request; every step "planned". A move of a pod without a controller is
//   refused (std::invalid_argument): nothing would recreate it.
// - DefragExecutor::run() carries the unfinished steps out in order. A move:
//   (1) re-reads the cluster: the pod must still be the planned one (same
//   UID, on `from`, not terminating), else the step is "skipped"; (2)
//   reserves the target GPUs: node annotation
//   reservation.gpupack.io/<plan>.<step> on `to` (reservation_value(): who
//   it is for, GPUs, request, expiry), which `gpupack serve` honours;
//   (3) evicts the pod through the Eviction API (UID precondition): HTTP 429
//   (a PodDisruptionBudget forbids it now) waits retry_429 and retries, at
//   most max_429_retries times, then the step is "skipped"; 404 means the pod
//   is already gone; any other error "failed"; (4) waits until a pod of the
//   same controller with another UID is Running: on `to` the step is "done",
//   elsewhere "failed" (named); none within step_timeout "failed"; (5)
//   releases the reservation and writes an Event on the pod. An admit step
//   reserves for the pending pod by name before the first move (the moves
//   free those GPUs; nothing else may take them) and, in its turn, waits for
//   the pod to run there (already there: "done"; elsewhere: "skipped"). Every
//   state change is in the journal (written durably: temporary file, fsync,
//   rename) before the next API call; a log line per step outcome.
//   `interval` separates moves (a rate limit).
// - stop() returning true (SIGINT/SIGTERM in the CLI) ends the run before
//   the next API call: the reservations of unfinished steps are released and
//   the journal says "aborted". An evicted pod's replacement is then left to
//   the scheduler.
// - resume: run() on a journal read back with read_journal() continues with
//   the first step not final; a step "reserved" re-checks its pod (still
//   there: evicted now; gone: waited for), one "evicted" is waited for.
//   release_all() removes every reservation the journal names and marks it
//   "released" (the cluster as if the unfinished steps had never started).
// - Reservations carry an expiry (reservation_ttl), so a killed executor
//   that is never restarted holds no GPUs past it.
// - Not thread-safe; the API calls block (KubeClient's timeout).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "defrag/plan.h"
#include "io/kubectl.h"
#include "server/kube_client.h"

namespace gpupack {

struct ExecStep {
  int index = 0;     // 1-based, as the plan table numbers steps
  std::string kind;  // "remap", "migrate", "evict" (moves) or "admit"
  std::string ns, pod, uid;
  std::string owner_kind, owner_name, owner_uid;  // empty for admit steps of bare pods
  std::string from, to;                           // from = "" for admit
  std::string gpus;                               // gpupack.io/assigned-gpus value on `to`
  Request request;                                // the journal keeps gpu_count, gpu_milli, cpu_milli and memory_mib
  // planned, reserved, evicted: in progress; done, skipped, failed: final.
  std::string state = "planned";
  std::string detail;  // why skipped or failed, or where the replacement runs
  std::string replacement;
  int evict_attempts = 0;
  bool reserved = false;  // the reservation annotation was written (and not yet released)
  // UIDs of the controller's pods when the step started: a replacement is
  // a pod of the controller not among them.
  std::vector<std::string> known_uids;

  bool final() const { return state == "done" || state == "skipped" || state == "failed"; }
  std::string reservation_key(const std::string& plan_id) const;
};

struct ExecJournal {
  std::string plan_id;
  std::string server;
  std::string created;         // RFC 3339 UTC
  std::string status = "new";  // new, running, finished, aborted, released
  std::vector<ExecStep> steps;

  int count(std::string_view state) const;
  bool unfinished() const { return status == "new" || status == "running"; }
};

ExecJournal make_journal(const DefragPlan& plan, const std::vector<K8sPod>& pods, const ClusterState& state,
                         const std::string& plan_id, const std::string& server);
nlohmann::json journal_to_json(const ExecJournal& j);
ExecJournal journal_from_json(const nlohmann::json& j, const std::string& where);
// Reads `path` (throws std::runtime_error naming the path and field).
ExecJournal read_journal(const std::string& path);
// Temporary file, fsync, rename, fsync of the folder.
void write_journal(const std::string& path, const ExecJournal& j);

// The reservation annotation's value for step `s` (io/kubectl.h
// GpuReservation: "for" is the controller for moves, the pod for admit
// steps; GPUs, request, expiry).
std::string reservation_value(const ExecJournal& j, const ExecStep& s, std::chrono::system_clock::time_point expires);

struct ExecOptions {
  std::string journal_path;
  std::chrono::milliseconds interval{10000};       // between moves
  std::chrono::milliseconds poll{1000};            // between reads while waiting
  std::chrono::milliseconds step_timeout{600000};  // replacement running
  std::chrono::milliseconds retry_429{5000};
  int max_429_retries = 5;
  std::chrono::seconds reservation_ttl{1800};
  std::function<bool()> stop = [] { return false; };
  // Called after every journal write (progress for people).
  std::function<void(const ExecStep&)> on_step = [](const ExecStep&) {};
};

class DefragExecutor {
 public:
  DefragExecutor(const KubeClient& client, ExecOptions options);
  // Runs the journal's unfinished steps (see the contract); returns the
  // journal as it ends (status finished or aborted).
  ExecJournal run(ExecJournal journal);
  // Removes every reservation the journal names; status "released".
  ExecJournal release_all(ExecJournal journal);

 private:
  void save(ExecJournal& j, ExecStep* s);
  std::vector<K8sPod> read_pods(const ExecJournal& j);
  void run_step(ExecJournal& j, ExecStep& s);
  // Re-reads the cluster; skips (or, for an admit step already placed
  // there, completes) the step, else reserves its GPUs.
  void check_and_reserve(ExecJournal& j, ExecStep& s);
  // A final step: reservation released, Event, log line, journal.
  void finish(ExecJournal& j, ExecStep& s);
  bool reserve(ExecJournal& j, ExecStep& s);
  void release(const ExecJournal& j, ExecStep& s, bool always = false);
  void evict(ExecJournal& j, ExecStep& s);
  void wait_running(ExecJournal& j, ExecStep& s);
  void event(const ExecStep& s, const std::string& reason, const std::string& message, bool warning);
  bool sleep_for(std::chrono::milliseconds d);  // false when stopped

  const KubeClient& client_;
  ExecOptions options_;
};

}  // namespace gpupack
