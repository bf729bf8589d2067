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
//   (3) picks the step's path (recorded as `path`): "surge" when
//   options.surge is kAuto and the owner can surge (surge_owner(): a
//   ReplicaSet with no owner, or owned by a Deployment that is neither
//   paused nor being rolled out; no HorizontalPodAutoscaler on it; `from`
//   != `to`; a dry run of the deletion-cost patch accepted), else "evict"
//   (`path_note` says why);
//   evict path: (4) evicts the pod through the Eviction API (UID
//   precondition): HTTP 429 (a PodDisruptionBudget forbids it now) waits
//   retry_429 and retries, at most max_429_retries times, then the step is
//   "skipped"; 404 means the pod is already gone; any other error "failed";
//   (5) waits until a pod of the same controller with another UID is
//   Running: on `to` the step is "done", elsewhere "failed" (named); none
//   within step_timeout "failed";
//   surge path (make-before-break): (4) records the owner's replicas N in
//   the journal, then scales the owner (its scale subresource, JSON patch
//   with a test of spec.replicas == N) to N+1: "scaled-up" (a refused
//   scale-up falls back to the evict path); (5) waits until a pod of the
//   controller with a UID not in known_uids is Running on `to`; (6) sets
//   controller.kubernetes.io/pod-deletion-cost to the lowest value on the
//   old pod and scales back to N (test of N+1): "scaled-down"; (7) waits
//   until the old pod is gone: "done" (still terminating at step_timeout:
//   "done" too; still running, or the new pod removed instead: "failed").
//   The new pod not running within step_timeout, or running elsewhere,
//   rolls back: the new pods get the lowest deletion cost, the owner is
//   scaled back to N, the step "failed". Replicas that are neither N nor
//   N+1 (someone else changed them) are left as they are, the step
//   "failed". PodDisruptionBudgets are not asked: the owner never runs
//   fewer pods than N.
//   Then (last) the reservation is released and an Event written on the
//   pod. A parked move (a swap) takes the evict path without waiting: once
//   evicted it is "parked" and keeps its reservation; the moves of its
//   cycle follow, and its land step waits as (5) for the replacement on
//   `to`, then releases the reservation and marks both "done". A parked
//   move that ends skipped or failed skips the rest of its cycle (up to its
//   land: the other moves would not fit). An admit step
//   reserves for the pending pod by name before the first move (the moves
//   free those GPUs; nothing else may take them) and, in its turn, waits for
//   the pod to run there (already there: "done"; elsewhere: "skipped"). Every
//   state change is in the journal (written durably: temporary file, fsync,
//   rename) before the next API call; a log line per step outcome.
//   `interval` separates moves (a rate limit).
// - stop() returning true (SIGINT/SIGTERM in the CLI) ends the run before
//   the next API call: the reservations of unfinished steps are released and
//   the journal says "aborted"; a surge step not yet scaled down is rolled
//   back (owner at N again, the step "planned" anew: resume checks and
//   reserves it again). An evicted pod's replacement is then left to the
//   scheduler.
// - resume: run() on a journal read back with read_journal() continues with
//   the first step not final; a step "reserved" re-checks its pod (still
//   there: evicted now; gone: waited for), one "evicted" is waited for;
//   a step without a path (a journal from before surge) is checked as an
//   evict step, then chooses. A surge step reads the owner's replicas: N+1
//   means the scale-up went out (waited for as "scaled-up"); N in
//   "scaled-up" that the scale-down did (once the new pod ran; before, the
//   step "failed", nothing left to undo).
//   release_all() removes every reservation the journal names, scales a
//   surge step's owner back to N where it is still at N+1, and marks the
//   journal "released" (the cluster as if the unfinished steps had never
//   started).
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
  // planned, reserved, evicted (evict path), scaled-up, scaled-down (surge
  // path): in progress; done, skipped, failed: final.
  // kind "land": the parked pod's replacement waited for on `to`.
  std::string state = "planned";
  // "" (not chosen yet), "evict" or "surge"; path_note says why "evict"
  // when surge was allowed but the owner could not surge.
  std::string path, path_note;
  // Surge: the object scaled (Deployment or ReplicaSet, in `ns`), its
  // replicas before (-1 = not recorded yet) and the executor's own value
  // (replicas_before + 1), and the surged pod's UID once it runs.
  std::string scale_kind, scale_name;
  int replicas_before = -1;
  int replicas_surge = -1;
  std::string new_uid;
  std::string detail;  // why skipped or failed, or where the replacement runs
  std::string replacement;
  int evict_attempts = 0;
  // A move of a swap (defrag/plan.h): evicted without waiting ("parked");
  // its replacement is waited for at the land step of the same pod.
  bool parked = false;
  bool reserved = false;  // the reservation annotation was written (and not yet released)
  // UIDs of the controller's pods when the step started: a replacement is
  // a pod of the controller not among them.
  std::vector<std::string> known_uids;

  // "parked" is final for the step itself: its land step finishes the move.
  bool final() const { return state == "done" || state == "skipped" || state == "failed" || state == "parked"; }
  // The executor's scale-up may be in effect (to be undone on abort/release).
  bool surge_pending() const {
    return path == "surge" && replicas_before >= 0 && (state == "reserved" || state == "scaled-up");
  }
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

// kAuto: surge where the owner can (Deployment, bare ReplicaSet; see
// surge_owner()); kNever: always evict then wait.
enum class SurgeMode { kAuto, kNever };

// The pod-deletion-cost the old pod gets before the scale-down (the
// ReplicaSet controller deletes the lowest first, among pods equally ready).
inline constexpr std::string_view kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";
inline constexpr std::string_view kLowestDeletionCost = "-2147483648";

struct ExecOptions {
  std::string journal_path;
  SurgeMode surge = SurgeMode::kAuto;
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
  ExecStep* park_of(ExecJournal& j, const ExecStep& land);
  void land(ExecJournal& j, ExecStep& s);
  void skip_cycle(ExecJournal& j, const ExecStep& park);
  // Re-reads the cluster; skips (or, for an admit step already placed
  // there, completes) the step, else reserves its GPUs.
  void check_and_reserve(ExecJournal& j, ExecStep& s);
  // A final step: reservation released, Event, log line, journal.
  void finish(ExecJournal& j, ExecStep& s);
  bool reserve(ExecJournal& j, ExecStep& s);
  void release(const ExecJournal& j, ExecStep& s, bool always = false);
  void evict(ExecJournal& j, ExecStep& s);
  void wait_running(ExecJournal& j, ExecStep& s);
  // Surge path (see the contract).
  void choose_path(ExecJournal& j, ExecStep& s);
  // What the step's owner allows: "" = it can surge (scale_kind/name set),
  // else why not.
  std::string surge_owner(ExecStep& s);
  std::string surge_owner_checked(ExecStep& s);  // a malformed reply: a reason, not a throw
  void scale_up(ExecJournal& j, ExecStep& s);
  void wait_surged(ExecJournal& j, ExecStep& s);
  void scale_down(ExecJournal& j, ExecStep& s);
  void wait_old_gone(ExecJournal& j, ExecStep& s);
  // Undoes the scale-up where it is still in effect: the new pods get the
  // lowest deletion cost and the owner goes back to replicas_before.
  // Returns "" or what went wrong; clears the step's scale record when the
  // owner is back at (or was never moved from) replicas_before.
  std::string roll_back_surge(ExecJournal& j, ExecStep& s);
  // roll_back_surge() for a step stopped mid-surge, which becomes
  // "planned" again (checked, reserved and its path chosen anew on resume).
  void abort_surge(ExecJournal& j, ExecStep& s);
  // The owner's spec.replicas now (-1 with `error` set when unreadable).
  int read_replicas(const ExecStep& s, std::string* error);
  // JSON patch of the scale subresource: test `from`, replace with `to`.
  KubeResponse patch_replicas(const ExecStep& s, int from, int to);
  // Sets (lowest) or removes the pod's deletion cost; "" when done or the
  // pod is gone. dry_run: only checks that the API would accept it.
  std::string set_deletion_cost(const ExecStep& s, const std::string& pod, bool lowest, bool dry_run = false);
  void event(const ExecStep& s, const std::string& reason, const std::string& message, bool warning);
  bool sleep_for(std::chrono::milliseconds d);  // false when stopped

  const KubeClient& client_;
  ExecOptions options_;
};

}  // namespace gpupack
