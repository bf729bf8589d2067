// The cluster as Kubernetes objects show it, in the engine's one ledger:
// every running pod is charged to its node, whoever scheduled it.
//
// Contract:
// - charge_running_pods() binds, into `state` (built from model_nodes() of
//   `nodes`), every pod i that is not terminal, has spec.nodeName
//   set and has skip[i] == 0, as PodId i, with model_request(pod, node):
//   CPU and memory, whole GPUs (nvidia.com/gpu), shares of one GPU (shared
//   replicas, gpupack.io/gpu-milli), advertised MIG devices and gpupack's
//   own annotation. First every pod whose GPUs are known (its
//   gpupack.io/assigned-gpus annotation) and every pod without GPUs, then
//   the pods whose GPU ids are unknown (placed by another scheduler, or an
//   unusable annotation) and the pods without GPUs, in list order, the
//   former on the GPUs `choose` picks on their node (default:
//   choose_placement; the extender passes its policy's choice), until the
//   pod says otherwise.
// - Nothing is silently absorbed: a pod that does not fit what its node has
//   left (more GPUs claimed than the node has) is a conflict: not charged,
//   counted in `conflicts` and named in `messages` ("ns/name: why"); so is a
//   pod on a node not in `nodes`, and an unusable annotation (the pod is
//   still charged, on chosen GPUs).
// - `unknown_ids` lists the PodIds charged on GPUs chosen here.
// - node_gate(): what the objects cannot tell the engine, as an
//   unresolvable reason ("model: ..." for a GPU product not in the catalog
//   when the pod names GPU models, "topology: ..." for a required
//   gpupack.io/gpu-scope level the node does not declare); "" when none.
// - pending_reason(): why a pending pod fits no node now: "schedulable", the
//   dimension that blocked most nodes (model/status.h names), or "no_nodes".
// - expected_workload(): the FGD target, as `simulate` builds it from a
//   trace: the requests of the GPU pods and of the pods without GPUs that
//   are pending or run on a node with GPUs (FGD's CPU-only classes), in the
//   order of `pods`; a default mix (whole 1/2/4/8 GPUs and quarter/half
//   shares) when no pod holds or asks for a GPU. WorkloadTally keeps the
//   same target pod by pod.
// - probe_requests(): the requests stranded capacity is judged by: the
//   pending pods' distinct requests, else the target's classes.
// - O(pods x GPUs); not thread-safe for `state`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "frag/fgd.h"
#include "io/kubectl.h"
#include "model/cluster_state.h"
#include "policy/gpu_choice.h"
#include "util/name_index.h"

namespace gpupack {

struct ChargeResult {
  std::vector<std::string> messages;
  int conflicts = 0;
  std::vector<PodId> unknown_ids;
};

// The engine's nodes for `nodes`: model_node() of each, in order, and the
// index of their names (what charge_running_pods() takes).
struct ModeledNodes {
  std::vector<NodeSpec> specs;
  NameIndex index;
};
ModeledNodes model_nodes(const std::vector<K8sNode>& nodes);

// Chooses the GPUs of a pod on a given node (default: choose_placement).
using GpuChooser = std::function<Placement(const ClusterState&, NodeId, const Request&)>;

ChargeResult charge_running_pods(ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                                 const std::vector<K8sPod>& pods, std::span<const uint8_t> skip = {},
                                 const GpuChooser& choose = {});

// The same for the listed (id, pod) pairs only, in that order (a watch
// event's pods charged into a model that holds the others).
ChargeResult charge_pods(ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                         std::span<const std::pair<PodId, const K8sPod*>> pods, const GpuChooser& choose = {});

// The message for a pod charged on GPUs gpupack chose because its
// annotation could not be used (`why`).
std::string chosen_gpus_note(const K8sPod& pod, const std::string& why);

// Would charge_pods() charge `pod` (bound, on a node in `nodes`) now without
// a conflict? No change to `state`.
bool charge_fits(const ClusterState& state, const std::vector<K8sNode>& nodes, const NameIndex& node_index,
                 const K8sPod& pod);

std::shared_ptr<TargetWorkload> expected_workload(const std::vector<const K8sPod*>& pods, const NameIndex& node_index,
                                                  const std::vector<K8sNode>& nodes);
// The FGD target kept pod by pod (serve's watch events): add() and remove()
// a pod's contribution (workload_request()) under a sequence number; target()
// equals expected_workload() over the counted pods in sequence order (equal
// counts keep the lowest sequence number first). O(log pods) per change,
// O(classes) per target().
class WorkloadTally {
 public:
  void add(uint64_t seq, const Request& request);
  void remove(uint64_t seq, const Request& request);  // a pair of an earlier add()
  std::shared_ptr<TargetWorkload> target() const;
  int64_t size() const { return total_; }

 private:
  using Key = std::tuple<int64_t, int32_t, int32_t, ModelMask>;
  struct Class {
    Request request;
    std::set<uint64_t> seqs;
  };
  std::map<Key, Class> classes_;
  int64_t total_ = 0, gpu_pods_ = 0;
};

// What `pod` adds to the FGD target: its request when it asks for GPUs, or
// asks for none and is pending or runs on a node with GPUs; nullopt else.
std::optional<Request> workload_request(const K8sPod& pod, const NameIndex& node_index,
                                        const std::vector<K8sNode>& nodes);

std::vector<Request> probe_requests(const std::vector<K8sNode>& nodes, const std::vector<const K8sPod*>& pending,
                                    const TargetWorkload& target);

std::string node_gate(const K8sNode& node, const K8sPod& pod);

std::string pending_reason(const ClusterState& state, const std::vector<K8sNode>& nodes, const K8sPod& pod);

}  // namespace gpupack
