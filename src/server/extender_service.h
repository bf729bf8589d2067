// ExtenderService: the scheduler-extender verbs behind `gpupack serve`
// (filter, prioritize, bind, preempt) as a thin adapter over the engine. No
// HTTP here.
//
// Contract:
// - Translation: each Kubernetes node and pod is translated once into the
//   engine's types (io/pod_resources.h); fit, score and GPU choice are the
//   engine's one cycle (sched/scheduler.h Scheduler::evaluate, with the
//   policy named at construction), and the one ClusterState is the only
//   ledger (GPU milli, GPU memory, advertised MIG devices, CPU, memory).
//   Pods are keyed by "namespace/name"; a pod's PodId is its index in the
//   pod table. Node tie-break rank = node index (list order).
// - Learning placements, whoever binds (docs/SERVE.md "Learning placements"):
//   (1) the cluster objects (set_cluster: a snapshot, or the API's list +
//   watch): every running pod is charged to its spec.nodeName
//   (analyze/cluster_model.h: whole GPUs, shares, MIG devices, gpupack's
//   annotation; GPU ids unknown until the pod says are the engine's choice;
//   conflicts are counted and named, never absorbed); (2) gpupack's own
//   bind(); (3) with ServiceOptions::assume_on_prioritize, prioritize()
//   assumes the pod on the node it scores 10. An assumed pod is released
//   when the same pod is filtered again, when the assumption is older than
//   assume_timeout, or replaced when bind() or the objects place it; the
//   counters say how many were assumed, confirmed (a bind or the objects
//   put the pod on the assumed node) and expired.
// - set_cluster() may be called again at any time (relist, watch): a pod
//   this service bound within the last kAssumeBindS seconds that arrives
//   still unbound keeps the service's node and GPUs; once the API shows the
//   pod bound, its own version wins. A pod only extender calls have shown is
//   kept when the new objects lack it: kKeepAbsentBoundS after a bind here
//   and kKeepAbsentPendingS after the call while pending. A pod the objects
//   showed and no longer show was deleted and is dropped. Pending pods keep
//   their first-seen time. The new model is built outside the lock and
//   swapped in; a bind that lands during the build makes it build again.
// - filter(): each candidate passes or fails with the engine's reason
//   ("<dimension>: <message>", dimensions as in model/status.h);
//   UnschedulableAndUnresolvable ones go to FailedAndUnresolvableNodes, or,
//   with ServiceOptions::legacy_failed_nodes (schedulers before v1.21), to
//   FailedNodes. Nodes the service's node list (API or snapshot) lacks are
//   unresolvable, whether sent as names or as full objects (these are added
//   only with ServiceOptions::accept_request_nodes); at most
//   kMaxUnknownListed unknown names are listed, with a short reason. A node
//   whose GPU product is not in the catalog never serves a pod that names
//   GPU models. A pod-level problem (unreadable Pod, unknown nvidia.com
//   resource, a schedulerName not in ServiceOptions::scheduler_names) is the
//   reply's Error; the HTTP layer answers it with 200. Such a pod changes
//   no state, and bind refuses a pod of another scheduler.
// - prioritize(): the node the engine would choose is the only one scored
//   kMaxExtenderPriority (10); the other feasible candidates get 1..9 by
//   their engine score (min-max over the feasible ones, rounded down),
//   infeasible ones 0. So ties at 10 never occur; lower ties only where the
//   0..9 scale cannot separate.
// - bind(): the engine's placement on the named node (the assumed one when
//   the pod is assumed there), bound in the state, then, with a Binder,
//   written out (assignment annotation + Binding, or the bind journal); on
//   a binder error the state change is undone. The Binder is called outside
//   the lock, so filter and prioritize do not wait for the API or the
//   disk; meanwhile the GPUs stay reserved (a reload carries the
//   reservation) and a second bind of the same pod is refused. Binding a
//   pod already bound to the same node is a no-op success.
// - Gangs (docs/SERVE.md "Gangs"): pods of one pod group (gang_key(); the
//   group's minimum from the pod, or from a PodGroup object given with
//   set_pod_groups()) are planned as one decision when the first member is
//   filtered and no plan exists: the engine's GangPlacer places every known
//   pending member (at least the minimum, less those already running): one
//   node, else one domain of each ServiceOptions::topology_labels level in
//   turn, else the whole cluster; the planned GPUs are reserved in the state for
//   the group (Learned::kReserved, carried across reloads). A planned
//   member's filter passes only its planned node and prioritize scores it
//   10; members outside the plan fail while the plan lives. A gang that
//   does not fit, or has fewer members known than its minimum, fails every
//   candidate and reserves nothing. bind_async() of a planned member is held
//   (its done callback kept, no worker held) until the minimum has asked
//   to bind; then every held member is written by Binder::bind_gang (one
//   durable intent for all before any Binding) and answered. A held call
//   is answered with an error after ServiceOptions::gang_bind_wait (before
//   the scheduler's httpTimeout); the member stays ready, and its Binding is
//   written with its gang's (the scheduler sees the pod bound). A plan without
//   progress for ServiceOptions::gang_timeout is dropped by tick(): its
//   reservations are released and its held binds answered with an error
//   (the scheduler retries them). Two gangs never both hold GPUs for the
//   same capacity: the second is planned against the first's reservation.
// - tick() (serve calls it every 50 ms) runs the timeouts (defrag
//   reservations past their expiry stop holding GPUs), and writes the
//   Bindings of gang members whose group was committed by a process that
//   died before binding them all (roll_forward: a member bound with the
//   same gpupack.io/gang-commit id proves the commit).
// - preempt(): keeps the candidate nodes where removing the proposed victims
//   (those bound there in the state) makes the pod fit; checkpoint/rollback,
//   nothing changes. Replies in NodeNameToMetaVictims form.
// - Thread-safe: every public call takes one mutex (the policy is not
//   thread-safe). Cost per filter/prioritize: one Scheduler::evaluate over
//   the candidates (O(candidates x GPUs) plus the policy's scoring).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/cluster_model.h"
#include "frag/cluster_metrics.h"
#include "frag/fgd.h"
#include "io/kubectl.h"
#include "model/cluster_state.h"
#include "policy/policy.h"
#include "sched/scheduler.h"
#include "server/extender_wire.h"
#include "util/name_index.h"

namespace gpupack {

// Writes a decision to the cluster (the Kubernetes API in production).
// Returns "" on success, else the error text. Called under the service lock.
class Binder {
 public:
  struct Item {
    K8sPod pod;
    std::string node, assigned_gpus;
  };
  virtual ~Binder() = default;
  virtual std::string bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) = 0;
  // A gang's members, all or none: a durable record of every member's
  // placement (tagged `commit_id`) before the first Binding, so that a
  // restart can finish what a crash cut short. Returns one error per item
  // ("" = bound). The default binds one by one (no crash guarantee).
  virtual std::vector<std::string> bind_gang(const std::vector<Item>& items, const std::string& commit_id);
};

// Called once with a bind's result; never under the service's lock.
using BindDone = std::function<void(ExtenderBindingResult)>;

// "<namespace>/<group>" of a pod in a pod group, "" for other pods.
std::string gang_key(const K8sPod& pod);

// Snapshot of what /metrics exports (computed under the lock, rendered outside).
struct ServiceMetrics : ClusterMetrics {
  struct Pending {
    std::string namespace_name, name, reason;
    double age_seconds = 0;
  };
  std::vector<Pending> pending;
  // Placements learned (see the contract): assumed at prioritize, confirmed
  // by a bind or the objects, expired (timed out or released by a new filter).
  uint64_t placements_assumed = 0, placements_confirmed = 0, placements_expired = 0;
  int assumed_now = 0;
  // Running pods the objects show that did not fit their node (over-commit
  // by another scheduler), since start.
  uint64_t charge_conflicts = 0;
  // Nodes whose nvidia.com/gpu.product is not in the catalog, per label:
  // each such label is its own pool, sized from the node (never another model).
  std::map<std::string, int> unknown_gpu_products;
  // Gangs: planned and waiting for their binds; committed (all held binds
  // written) and timed out since start; GPUs (milli) reserved for waiting
  // gangs; binds held.
  int gangs_waiting = 0;
  uint64_t gangs_placed = 0, gangs_timed_out = 0;
  int64_t gang_reserved_gpu_milli = 0;
  int gang_binds_held = 0;
  // set_cluster() calls (snapshot loads, relists, watch flushes) and their
  // wall time, since start: a whole-model rebuild each, built outside the lock.
  uint64_t model_reloads = 0;
  double model_reload_seconds = 0;
  // update_pods() batches applied in place (no rebuild), since start.
  uint64_t model_pod_updates = 0;
  // Nodes with GPUs whose per-node and per-GPU series were left out
  // (ServiceOptions::metrics_max_nodes); 0 = none.
  int metrics_nodes_omitted = 0;
};

struct ServiceOptions {
  std::string policy = "fgd";  // as in policy/registry.h
  uint64_t seed = 42;
  // Assume each pod on its top-scored node at prioritize (snapshot mode
  // without bind: nothing else would tell gpupack where it went).
  bool assume_on_prioritize = false;
  std::chrono::milliseconds assume_timeout{std::chrono::seconds(30)};
  // List unresolvable nodes in FailedNodes (kube-scheduler before v1.21
  // has no FailedAndUnresolvableNodes and would drop them without a reason).
  bool legacy_failed_nodes = false;
  // Pods whose spec.schedulerName is one of these are served (filter,
  // prioritize, preempt, bind); others get an Error and change nothing.
  // Empty = any.
  std::set<std::string> scheduler_names = {};
  // Full Node objects in a request that gpupack's node list (the API or the
  // snapshot) lacks are added to the model (true) or unresolvable (false).
  bool accept_request_nodes = false;
  // A gang plan without progress (a member's bind) for this long is dropped.
  std::chrono::milliseconds gang_timeout{std::chrono::seconds(20)};
  // A held bind is answered (with an error) after this long so that the
  // scheduler's call does not time out (gpupack config writes httpTimeout
  // 10s); the member stays ready and gpupack binds it with its gang.
  std::chrono::milliseconds gang_bind_wait{std::chrono::seconds(8)};
  // Node labels naming a gang's locality domains, narrowest first (e.g. a
  // rack label, then a switch or block label): a gang that no single node
  // holds is placed inside one domain of the first level that can hold it.
  std::vector<std::string> topology_labels = {};
  // /metrics exports per-GPU and per-node series only while the model has at
  // most this many nodes with GPUs (pools and totals always): at 100,000
  // nodes the per-GPU series alone were 370 MB of text per scrape.
  int metrics_max_nodes = 5000;
  // Threads scoring one request's nodes when it has many distinct ones
  // (sched/scheduler.h parallel scoring: hardware requests over thousands
  // of nodes, a Nodes-mode request of thousands of node classes); 1 = the
  // request's own thread only. Answers do not depend on it.
  int score_threads = 1;
};

class ExtenderService {
 public:
  // How long a bind made here outlives stale cluster objects (see above).
  static constexpr int kAssumeBindS = 300;
  static constexpr int kKeepAbsentBoundS = 30;
  static constexpr int kKeepAbsentPendingS = 60;

  // Throws std::invalid_argument on an unknown policy name.
  explicit ExtenderService(std::string policy_name, uint64_t seed = 42);
  explicit ExtenderService(ServiceOptions options);
  ~ExtenderService();

  // Replaces the whole model. Returns messages for pods that could not be
  // charged as they are (also kept in unattributed()).
  std::vector<std::string> set_cluster(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                       std::vector<nlohmann::json> pod_objects = {});
  // A pod as the API now shows it (watch events); `deleted`: gone (only
  // `key` is read).
  struct PodChange {
    std::string key;
    K8sPod pod;
    nlohmann::json object;
    bool deleted = false;
  };
  // Applies pod changes in place, under the lock, when the nodes (and DRA
  // claims) are as at the last set_cluster(): the model set_cluster() would
  // build from the objects with these changes (the rules above), without
  // rebuilding it; the FGD target follows (analyze/cluster_model.h
  // WorkloadTally; pods first seen here count after those of the last
  // load). Returns false, having changed nothing, when a change needs the
  // whole rebuild: a gang member or commit, DRA claims, an assumed pod
  // placed, a bind in flight, a reservation on the pod's node, a pod that
  // moved, changed its request or GPUs, or that only calls showed, deleted.
  // O(changes x log pods) plus, when the target changes, a new policy (its
  // caches start cold).
  bool update_pods(std::vector<PodChange> changes);
  void set_binder(Binder* binder);  // not owned; nullptr = in-memory only

  ExtenderFilterResult filter(const ExtenderArgs& args);
  HostPriorityList prioritize(const ExtenderArgs& args, std::string* error);
  // Decisions scored on several threads so far (ServiceOptions::score_threads;
  // tests, benchmarks).
  uint64_t parallel_walks() const;
  ExtenderBindingResult bind(const ExtenderBindingArgs& args);  // bind_async, waited for
  void bind_async(const ExtenderBindingArgs& args, BindDone done);
  ExtenderPreemptionResult preempt(const ExtenderPreemptionArgs& args, std::string* error);

  // Group key ("ns/name") -> minMember of PodGroup objects (scheduler-plugins,
  // Volcano, KAI); replaces the previous map.
  void set_pod_groups(std::map<std::string, int> min_member);
  // Timeouts and gang roll-forward (see the contract); call periodically.
  void tick();
  // Answers every held gang bind with `why` and drops the plans (shutdown).
  void stop_gangs(const std::string& why);

  ServiceMetrics metrics() const;
  // The GPU map of the model (analyze/gpu_map.h) for /ui.
  nlohmann::json gpu_map() const;
  bool ready() const;
  std::vector<std::string> unattributed() const;

  // Assignments of the bound GPU pods: "ns/name" -> gpupack.io/assigned-gpus value.
  std::map<std::string, std::string> assignments() const;
  // "ns/name" -> node of every pod placed in the state (bound or assumed).
  std::map<std::string, std::string> placements() const;
  std::vector<K8sPod> pods() const;
  nlohmann::json pod_list_json() const;
  // Increases with every successful bind and every set_cluster().
  uint64_t mutation_count() const;

 private:
  enum class Learned : uint8_t { kNone, kObjects, kBoundHere, kAssumed, kReserved };
  struct PodEntry {
    K8sPod pod;
    nlohmann::json object;  // null when unknown
    Learned learned = Learned::kNone;
    std::chrono::steady_clock::time_point first_seen;
    mutable std::string pending_reason;
    std::optional<std::chrono::steady_clock::time_point> bound_here_at;
    std::optional<std::chrono::steady_clock::time_point> from_call_at;
    std::chrono::steady_clock::time_point assumed_at;
    bool gpus_chosen = false;  // placed by others, on GPUs gpupack chose (the objects name none)
    // A defragmentation reservation's placeholder (not a pod): charged on
    // the reserved GPUs until a pod it is for binds there.
    std::optional<GpuReservation> reservation;
    // What the pod adds to the FGD target (workload_request) and under
    // which sequence number; nullopt = nothing (or not counted yet).
    std::optional<Request> counted;
    uint64_t seq = 0;
  };
  struct Carried {
    struct Assumed {
      std::string uid, node, annotation;
      std::chrono::steady_clock::time_point at;
    };
    std::chrono::steady_clock::time_point now;
    std::unordered_map<std::string, Assumed> assumed;
    std::unordered_map<std::string, std::chrono::steady_clock::time_point> first_seen;
    struct Recent {
      K8sPod pod;
      nlohmann::json object;
      std::optional<std::chrono::steady_clock::time_point> bound_here_at, from_call_at;
    };
    std::vector<Recent> recent;
    // Pods assumed at prioritize: key -> (uid, node, assignment, when).
    struct Guess {
      std::string uid, node;
      Request request;
      Assignment assignment;
      std::chrono::steady_clock::time_point at;
    };
    std::unordered_map<std::string, Guess> guesses;
    // Pods placed by others, on the GPUs gpupack chose for them: kept.
    std::unordered_map<std::string, Guess> chosen;
    // Binds waiting on the Binder (outside the lock): GPUs stay reserved.
    std::unordered_map<std::string, Guess> inflight;
    // Planned gang members: GPUs reserved for the group.
    std::unordered_map<std::string, Guess> reserved;
    // Defragmentation reservations a pod has taken (annotation keys).
    std::set<std::string> consumed_reservations;
  };
  struct Gang {
    std::string key;
    int required = 0;                  // binds that commit the plan (minimum less those running)
    std::vector<std::string> members;  // planned pod keys, plan order
    std::map<std::string, std::string> node_of;
    // Members that asked to bind, in order; `done` is empty once the call
    // was answered at gang_bind_wait (the member stays ready).
    struct Held {
      std::string key;
      BindDone done;
      std::chrono::steady_clock::time_point since;
    };
    std::vector<Held> held;
    bool committing = false;
    int committed = 0;  // members written by commits
    std::chrono::steady_clock::time_point deadline;
  };
  using Answers = std::vector<std::pair<BindDone, ExtenderBindingResult>>;
  struct Counters {
    uint64_t assumed = 0, confirmed = 0, expired = 0, conflicts = 0;
    uint64_t gangs_placed = 0, gangs_timed_out = 0, commits = 0;
    uint64_t reloads = 0;       // set_cluster() calls
    double reload_seconds = 0;  // their wall time, from the call to the new model in place
    uint64_t pod_updates = 0;   // update_pods() batches applied
  };
  // What update_pods() does with one change (see classify_change_locked).
  enum class ChangeAct : uint8_t { kSkip, kRemove, kAdd, kUpdatePending, kKeepHere, kUpdateBound, kCharge };

  Carried carry_locked() const;
  ServiceMetrics metrics_locked() const;
  void load_locked(std::vector<K8sNode> nodes, std::vector<K8sPod> pods, std::vector<nlohmann::json> pod_objects,
                   const Carried& carried);
  void swap_model_locked(ExtenderService& other);
  void rebuild_state_locked();
  // A new policy (and scheduler) for the target tally_ counts now.
  void retarget_locked();
  // The GPUs of a pod others placed without naming them: the policy's choice.
  GpuChooser gpu_chooser_locked();
  std::optional<ChangeAct> classify_change_locked(const PodChange& c) const;
  // Unbinds and drops pods_[i] (the last entry takes its index and PodId).
  void remove_pod_locked(int i);
  // Counts pods_[i] in the FGD target again; true when its part changed.
  bool recount_locked(int i);
  int node_index_locked(const std::string& name) const;
  // node_index_locked() for the k-th candidate of a request, through the
  // names the last requests had at each position (cleared whenever the node
  // table changes).
  int candidate_index_locked(const std::string& name, size_t k);
  int add_node_locked(const nlohmann::json& node_object, std::string* error);
  int pod_index_locked(const K8sPod& pod, const nlohmann::json& object);
  std::string scheduler_refused(const K8sPod& pod) const;  // "" when served
  void finish_bind_locked(PodEntry& e, PodId pid, const std::string& node, const std::string& annotation,
                          bool confirmed);
  std::optional<K8sPod> parse_args_pod(const nlohmann::json& pod, std::string* error) const;
  void expire_assumed_locked();
  void expire_reservations_locked();  // unbinds placeholders past their expiry (tick)
  bool release_locked(int pod);       // unbinds an assumed pod (not one whose bind is in flight); true if it did
  // The engine's evaluation of `pod` over candidate node indices: the
  // decision and every feasible candidate's score; requests differ per node
  // only for shared replicas (one evaluate per distinct request).
  // scheduler_ for policy_, scoring on this service's pool.
  void new_scheduler_locked();
  Decision evaluate_locked(const K8sPod& pod, const std::vector<int>& nodes, std::vector<ScoredNode>* scored);
  Decision evaluate_groups_locked(const K8sPod& pod, const std::vector<int>& nodes, std::vector<ScoredNode>* scored);
  // Placeholders (pods_ indices, bound) of the defragmentation reservations
  // `pod` may take; empty for most pods.
  std::vector<int> claims_locked(const K8sPod& pod) const;
  // The node of a reservation for `pod` whose GPUs are still in use ("" = none).
  std::string waiting_on_locked(const K8sPod& pod) const;
  // "<dimension>: message" and whether it is unresolvable, for a node where
  // the pod does not fit.
  std::pair<std::string, bool> explain_locked(int node, const K8sPod& pod) const;
  // Gangs. plan_gang_locked plans pod `pi`'s group unless it has a plan or
  // enough members running; returns "" or why the gang cannot be placed.
  std::string plan_gang_locked(int pi);
  const Gang* gang_of_locked(int pi) const;
  void release_gang_locked(Gang& g, const std::string& why, Answers& answers);
  void expire_gangs_locked(Answers& answers);
  // Writes the held binds of gang `key` (drops and retakes the lock).
  void commit_gang(std::unique_lock<std::mutex>& lock, const std::string& key, Answers& answers);
  static void answer(Answers& answers);
  ExtenderBindingResult bind_one(std::unique_lock<std::mutex>& lock, const ExtenderBindingArgs& args);
  std::vector<int> resolve_candidates_locked(const ExtenderArgs& args, std::vector<std::string>& names,
                                             std::map<std::string, std::string>& unresolvable,
                                             std::vector<size_t>* positions = nullptr);

  mutable std::mutex mu_;
  // The repack bound's LP /metrics last solved (it runs outside mu_): the
  // items it was solved for and its GPUs; repack_mu_ serialises scrapes.
  mutable std::mutex repack_mu_;
  mutable std::vector<std::pair<int32_t, double>> repack_items_;  // starts as none, solved: 0 GPUs
  mutable double repack_fluid_gpus_ = 0;
  ServiceOptions options_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<WorkPool> score_pool_;  // options_.score_threads > 1
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<TargetWorkload> target_;
  WorkloadTally tally_;    // the pods target_ was made from
  uint64_t next_seq_ = 0;  // tally sequence number of the next pod counted
  std::vector<K8sNode> nodes_;
  NameIndex node_index_;                                // node name -> index in nodes_
  static constexpr size_t kRecentCandidates = 1 << 18;  // positions remembered (bounded memory)
  std::vector<std::string> recent_names_;               // candidate name last seen at each position
  std::vector<int> recent_index_;                       // and its node index
  std::vector<PodEntry> pods_;
  std::unordered_map<std::string, int> pod_index_;
  std::unique_ptr<ClusterState> state_;
  std::vector<std::string> unattributed_;
  // Node index -> running pods the objects put there that could not be
  // charged (conflicts): update_pods leaves such nodes to the rebuild,
  // which tries those pods again.
  std::unordered_map<int, int> conflicts_on_node_;
  std::unordered_map<std::string, Carried::Guess> inflight_;  // pod key -> bind waiting on the Binder
  std::map<std::string, Gang> gangs_;                         // group key -> live plan
  std::map<std::string, int> pod_group_min_;                  // PodGroup objects' minMember
  std::vector<Binder::Item> roll_forward_;                    // gang members to bind (tick)
  std::vector<int> reservation_ids_;                          // pods_ indices of reservation placeholders
  std::set<std::string> consumed_reservations_;               // taken by a bound pod (annotation keys)
  Binder* binder_ = nullptr;
  bool ready_ = false;
  uint64_t mutations_ = 0;
  int assumed_now_ = 0;
  Request best_request_;  // the request of the last evaluate_locked() decision
  Counters counters_;
};

// "gpu_milli" etc.: the label value / message prefix for a dimension.
std::string dimension_label(Dimension d);

}  // namespace gpupack
