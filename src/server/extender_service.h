// ExtenderService: the scheduler-extender logic behind `gpupack serve`
// (filter, prioritize, bind, preempt) over one ClusterState. No HTTP here.
//
// Contract:
// - The service owns the cluster model: the known nodes (K8sNode, in
//   ClusterState order), every pod it has seen (bound or pending), the
//   ClusterState, per-GPU allocated GPU memory (MiB, from
//   gpupack.io/gpu-memory-mib) and per-node allocated MIG devices. Pods are
//   keyed by "namespace/name"; a pod's PodId is its index in the pod table.
// - Start state: set_cluster() with nodes and pods (a kubectl snapshot or an
//   API list / watch). Bound pods are rebuilt from their gpupack.io/assigned-gpus
//   annotations (io/kubectl.h rebuild_assignments), so a restart from the same
//   objects reproduces every assignment; pods that cannot be attributed are
//   reported by unattributed(). set_cluster() may be called again at any time
//   (relist, watch): a pod this service bound within the last kAssumeBindS
//   seconds that arrives still unbound (the API has not shown the Binding yet)
//   keeps the service's node and GPUs, so a stale list never frees GPUs that
//   were just given away; once the API shows the pod bound, its own version
//   wins. A pod that only extender calls have shown (never the cluster
//   objects) is kept when the new objects lack it: for kKeepAbsentBoundS
//   after a bind here (its GPUs stay taken) and kKeepAbsentPendingS after
//   the call while pending, so a watch that lags the scheduler neither frees
//   GPUs nor forgets a pod about to be bound. A pod the objects showed and
//   no longer show was deleted and is dropped. Pending pods keep their first-seen time across calls. The new
//   model is built outside the lock and swapped in (calls wait only for the
//   swap); a bind that lands during the build makes it build again.
// - filter(): each candidate node passes or fails with the dimension that
//   blocked it in the message ("gpu_milli: ...", "gpu_memory: ...",
//   "mig_slot: ...", "model: ...", "cpu: ...", "memory: ...",
//   "topology: ..."); failures that no preemption can fix go to
//   FailedAndUnresolvableNodes. "topology" comes from a pod's required
//   gpupack.io/gpu-scope: unresolvable when the node declares no such groups
//   (gpupack.io/gpu-topology) or none as large as the pod, else when no group
//   has enough GPUs with the milli and GPU memory free. Nodes sent as full objects that the service
//   does not know yet are added to the model. Unknown node names (cache mode)
//   are unresolvable.
// - prioritize(): the policy's score of each feasible candidate, min-max
//   rescaled over the candidates to 0..100 and mapped to 0..10 (rounded to
//   nearest); infeasible candidates score 0; equal scores all get 10.
// - bind(): chooses the GPUs (policy's choice, restricted to GPUs with enough
//   free GPU memory; for a pod with gpupack.io/gpu-scope, kept when it lies in
//   one group, else best fit in the smallest group that holds the pod),
//   updates the model, then, when a Binder is set, writes
//   the assignment annotation and creates the Binding through it; on a binder
//   error the model change is undone. Binding a pod already bound to the same
//   node is a no-op success (retries never double-charge).
// - preempt(): keeps the candidate nodes where removing the proposed victims
//   (those gpupack knows as bound there) makes the pod fit; checked with
//   ClusterState checkpoint/rollback, nothing changes. Replies in
//   NodeNameToMetaVictims form (victim UIDs).
// - Thread-safe: every public call takes one mutex (the policy is not
//   thread-safe). Cost per filter/prioritize: O(candidates x GPUs) plus the
//   policy's scoring; node names are looked up in a hash map.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "frag/fgd.h"
#include "io/kubectl.h"
#include "model/cluster_state.h"
#include "policy/policy.h"
#include "server/extender_wire.h"

namespace gpupack {

// Writes a decision to the cluster (the Kubernetes API in production).
// Returns "" on success, else the error text. Called under the service lock.
class Binder {
 public:
  virtual ~Binder() = default;
  virtual std::string bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) = 0;
};

// Snapshot of what /metrics exports (computed under the lock, rendered outside).
struct ServiceMetrics {
  struct Gpu {
    std::string node;
    int gpu = 0;
    std::string model;
    int32_t allocated_milli = 0;
    int64_t allocated_memory_mib = 0;
    int64_t memory_mib = 0;  // capacity; 0 = unknown
    int64_t stranded_memory_mib = 0;
    bool stranded = false;
  };
  struct Node {
    std::string name;
    std::string model;
    int64_t allocated_milli = 0;
    int64_t capacity_milli = 0;
    std::map<std::string, std::pair<int64_t, int64_t>> mig;  // profile -> (allocated, allocatable)
  };
  struct Pool {
    std::string model;
    int64_t capacity_milli = 0;
    int64_t free_milli = 0;
    double fragmentation_milli = 0;
    int stranded_gpus = 0;
  };
  struct Pending {
    std::string namespace_name, name, reason;
    double age_seconds = 0;
  };
  std::vector<Gpu> gpus;
  std::vector<Node> nodes;
  std::vector<Pool> pools;
  std::vector<Pending> pending;
  double cluster_fragmentation_milli = 0;
  int64_t cluster_free_milli = 0;
  int bound_pods = 0;
  int node_count = 0;
};

class ExtenderService {
 public:
  // How long a bind made here outlives stale cluster objects (see above).
  static constexpr int kAssumeBindS = 300;
  // A pod only extender calls have shown, absent from the new objects, is
  // kept this long after a bind here, or after the call while pending.
  static constexpr int kKeepAbsentBoundS = 30;
  static constexpr int kKeepAbsentPendingS = 60;

  // `policy_name` as in policy/registry.h. Throws std::invalid_argument on an
  // unknown name.
  explicit ExtenderService(std::string policy_name, uint64_t seed = 42);
  ~ExtenderService();

  // Replaces the whole model. Returns messages for pods that could not be
  // rebuilt (also kept in unattributed()).
  // `pod_objects`, when given, holds the pods' JSON objects (same order) so
  // that pod_objects() can write the cluster back out.
  std::vector<std::string> set_cluster(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                       std::vector<nlohmann::json> pod_objects = {});
  void set_binder(Binder* binder);  // not owned; nullptr = in-memory only

  ExtenderFilterResult filter(const ExtenderArgs& args);
  HostPriorityList prioritize(const ExtenderArgs& args, std::string* error);
  ExtenderBindingResult bind(const ExtenderBindingArgs& args);
  ExtenderPreemptionResult preempt(const ExtenderPreemptionArgs& args, std::string* error);

  ServiceMetrics metrics() const;
  bool ready() const;
  std::vector<std::string> unattributed() const;

  // Assignments of the bound GPU pods: "ns/name" -> gpupack.io/assigned-gpus value.
  std::map<std::string, std::string> assignments() const;
  // Pods as the service knows them now (annotations updated by bind), for
  // writing a snapshot back out.
  std::vector<K8sPod> pods() const;
  // The pods as Kubernetes objects: the JSON last received for each (from
  // set_cluster or an extender call) with spec.nodeName and the assignment
  // annotation of binds made since. Pods known only without JSON are skipped.
  nlohmann::json pod_list_json() const;
  // Increases with every successful bind and every set_cluster().
  uint64_t mutation_count() const;

 private:
  struct PodEntry {
    K8sPod pod;
    nlohmann::json object;  // null when unknown
    bool bound = false;
    Request request;
    Assignment assignment;
    std::chrono::steady_clock::time_point first_seen;
    // From the last filter call, else from the first metrics() evaluation
    // (kept, so that scrapes do not re-check every node under the lock).
    mutable std::string pending_reason;
    // Set by a successful bind() here; cleared once the cluster objects show it.
    std::optional<std::chrono::steady_clock::time_point> bound_here_at;
    // Set when the pod became known from an extender call rather than from
    // the cluster objects; cleared once they show it.
    std::optional<std::chrono::steady_clock::time_point> from_call_at;
  };
  struct Fit {
    Dimension dimension = Dimension::kNone;
    bool unresolvable = false;
    std::string message;
    bool ok() const { return dimension == Dimension::kNone; }
  };

  // What a reload keeps from the model it replaces: binds made here that the
  // new objects may not show yet, and when each pod was first seen.
  struct Carried {
    struct Assumed {
      std::string uid, node, annotation;
      std::chrono::steady_clock::time_point at;
    };
    std::chrono::steady_clock::time_point now;
    std::unordered_map<std::string, Assumed> assumed;
    std::unordered_map<std::string, std::chrono::steady_clock::time_point> first_seen;
    // Recent pods kept if the new objects lack them (see kKeepAbsent*).
    struct Recent {
      K8sPod pod;
      nlohmann::json object;
      std::optional<std::chrono::steady_clock::time_point> bound_here_at, from_call_at;
    };
    std::vector<Recent> recent;
  };
  Carried carry_locked() const;
  void load_locked(std::vector<K8sNode> nodes, std::vector<K8sPod> pods, std::vector<nlohmann::json> pod_objects,
                   const Carried& carried);
  void swap_model_locked(ExtenderService& other);
  void rebuild_state_locked();
  void refresh_target_locked();
  int node_index_locked(const std::string& name) const;
  int add_node_locked(const nlohmann::json& node_object, std::string* error);
  int pod_index_locked(const K8sPod& pod, const nlohmann::json& object);
  std::optional<K8sPod> parse_args_pod(const nlohmann::json& pod, std::string* error) const;
  Fit check_node_locked(int node, const K8sPod& pod, const std::vector<int64_t>* mem_override = nullptr,
                        const std::map<std::string, int64_t>* mig_override = nullptr) const;
  uint32_t choose_gpus_locked(int node, const K8sPod& pod, const Request& req);
  void charge_locked(PodEntry& e, int sign);
  // Candidate node indices in request order, their names, and (for
  // node_texts requests) each one's position in args.node_texts.
  std::vector<int> resolve_candidates_locked(const ExtenderArgs& args, std::vector<std::string>& names,
                                             std::map<std::string, std::string>& unresolvable,
                                             std::vector<size_t>* positions = nullptr);

  mutable std::mutex mu_;
  std::string policy_name_;
  uint64_t seed_;
  std::unique_ptr<Policy> policy_;
  std::shared_ptr<TargetWorkload> target_;
  std::vector<K8sNode> nodes_;
  std::unordered_map<std::string, int> node_index_;
  std::vector<PodEntry> pods_;
  std::unordered_map<std::string, int> pod_index_;
  std::unique_ptr<ClusterState> state_;
  std::vector<std::vector<int64_t>> gpu_mem_used_;            // [node][gpu] MiB
  std::vector<std::map<std::string, int64_t>> mig_used_;     // [node] profile -> devices
  std::vector<std::string> unattributed_;
  Binder* binder_ = nullptr;
  bool ready_ = false;
  uint64_t mutations_ = 0;
};

// "gpu_milli" etc.: the label value / message prefix for a dimension.
std::string dimension_label(Dimension d);

}  // namespace gpupack
