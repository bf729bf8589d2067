// Kubernetes Node and Pod objects (as `kubectl get nodes -o json` and
// `kubectl get pods -A -o json` print them) turned into gpupack's model.
//
// Contract:
// - Quantities follow Kubernetes rules (io/quantity.h). Node capacities use
//   `status.allocatable` (falling back to `status.capacity` per resource) and
//   round memory down; pod requests round up.
// - A pod's request per resource is max(sum over containers, max over init
//   containers) plus `spec.overhead`; a container resource given only in
//   `limits` counts as its request (API defaulting does the same).
// - GPU requests come from `nvidia.com/gpu` (whole GPUs), `nvidia.com/gpu.shared`
//   (time-slicing/MPS replicas, resolved per node by request_on()),
//   `nvidia.com/mig-<profile>` (kept in K8sPod::mig_devices, not in Request) and
//   the gpupack.io annotations documented in docs/KUBERNETES.md.
// - GPU topology inside a node comes from the node annotation
//   gpupack.io/gpu-topology (NVLink domains, PCIe switches, NUMA nodes as
//   groups of GPU indices) and fills NodeSpec::gpus; a pod asks for its GPUs
//   in one such group with gpupack.io/gpu-scope (Request::gpu_scope,
//   scope_required unless gpupack.io/gpu-scope-policy says "preferred").
// - Every error is a std::invalid_argument whose message starts with the
//   object ("Pod ns/name", "Node name"), then the JSON field path, then the
//   offending value. Functions are thread-safe. Parsing has one side effect:
//   a node with an unknown GPU product registers (once per product) an
//   unknown pool in the process-wide GPU catalog; a rejected node registers
//   nothing.
// - Pod model constraints: gpupack.io/gpu-models and openb's
//   alibabacloud.com/gpu-card-model list built-in models (catalog names or
//   product strings) separated by ',' or '|'; an unknown or empty name is an
//   error naming the annotation and value; both given = both must hold.
// - Cost: linear in the size of the JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster_state.h"
#include "model/gpu_catalog.h"
#include "model/node.h"
#include "model/request.h"
#include "util/shared_map.h"

namespace gpupack {

// gpupack's own pod and node annotations (see docs/KUBERNETES.md).
namespace annotations {
inline constexpr std::string_view kGpuMilli = "gpupack.io/gpu-milli";           // 1..1000 per GPU
inline constexpr std::string_view kGpuMemoryMib = "gpupack.io/gpu-memory-mib";  // per GPU, MiB
inline constexpr std::string_view kGpuModels = "gpupack.io/gpu-models";         // "A100-80GB,H100-80GB"
inline constexpr std::string_view kGangName = "gpupack.io/gang-name";
inline constexpr std::string_view kGangSize = "gpupack.io/gang-size";
inline constexpr std::string_view kGangMinMember = "gpupack.io/gang-min-member";
inline constexpr std::string_view kAssignedGpus = "gpupack.io/assigned-gpus";  // "node-a:0,1[@milli]"
// Pod: "<commit id>@<node>", written on every member of a gang before its
// first Binding (the all-or-nothing intent a restart completes).
inline constexpr std::string_view kGangCommit = "gpupack.io/gang-commit";
// Pod-group membership in the forms other gang schedulers use: the
// scheduler-plugins coscheduling label, Volcano's and KAI-Scheduler's pod
// annotations. Each names a PodGroup object (same namespace) whose
// spec.minMember is the group's minimum.
inline constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kVolcanoGroupName = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kKaiPodGroupName = "pod-group-name";
// Pod: keep the GPUs in one group of this kind: nvlink | pcie-switch | numa.
inline constexpr std::string_view kGpuScope = "gpupack.io/gpu-scope";
// Pod: required (the default: nodes without such a group are filtered out) | preferred.
inline constexpr std::string_view kGpuScopePolicy = "gpupack.io/gpu-scope-policy";
// Node: "nvlink=0-3|4-7;pcie-switch=0,1|2,3|4,5|6,7;numa=0-3|4-7".
inline constexpr std::string_view kGpuTopology = "gpupack.io/gpu-topology";
// Accepted for compatibility with openb/Alibaba traces and captures.
inline constexpr std::string_view kAlibabaGpuMilli = "alibabacloud.com/gpu-milli";
inline constexpr std::string_view kAlibabaGpuCount = "alibabacloud.com/gpu-count";
// Node label (the GPU product, when nvidia.com/gpu.product is absent) and pod
// annotation (allowed models, '|'-separated: "V100M16|V100M32").
inline constexpr std::string_view kAlibabaGpuCardModel = "alibabacloud.com/gpu-card-model";
}  // namespace annotations

// The unknown pool of nodes that advertise GPUs but name no product.
inline constexpr std::string_view kUnlabeledGpuPool = "unlabeled";

struct K8sTaint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
  friend bool operator==(const K8sTaint&, const K8sTaint&) = default;
};

struct K8sNode {
  NodeSpec spec;  // name, allocatable cpu/memory, physical GPU count, model
  // Shared by copies (util/shared_map.h): a node is copied with every rebuild.
  SharedMap<std::string, std::string> labels;
  SharedMap<std::string, std::string> annotations;
  std::vector<K8sTaint> taints;
  SharedMap<std::string, std::string> allocatable;  // raw quantities
  SharedMap<std::string, std::string> capacity;     // raw quantities
  bool unschedulable = false;                       // spec.unschedulable
  bool ready = true;                                // Ready condition (true when absent)

  // GPU facts.
  std::string gpu_product;                     // the label the model came from ("" when none)
  bool gpu_model_known = false;                // gpu_product is a built-in model (else spec.gpu_model
                                               // is an unknown pool when the node has GPUs)
  int64_t gpu_memory_mib = 0;                  // nvidia.com/gpu.memory label; 0 = unknown
  int32_t gpu_replicas = 1;                    // sharing replicas per GPU (>= 1)
  std::string sharing_strategy;                // nvidia.com/gpu.sharing-strategy; "" when absent
  std::string mig_strategy;                    // nvidia.com/mig.strategy; "" when absent
  int64_t gpu_resource = 0;                    // allocatable nvidia.com/gpu
  int64_t gpu_shared_resource = 0;             // allocatable nvidia.com/gpu.shared
  std::map<std::string, int64_t> mig_devices;  // profile ("1g.10gb") -> allocatable count
  // Levels that gpupack.io/gpu-topology declares, bit (1 << GpuScope); the
  // groups are the ids in spec.gpus (and spec.numa for NUMA).
  uint8_t gpu_topology_scopes = 0;
  bool declares(GpuScope s) const { return (gpu_topology_scopes >> static_cast<unsigned>(s)) & 1u; }
  // Findings that did not reject the object, each naming the node, the field
  // and the value (an unknown GPU product and the pool it went to).
  std::vector<std::string> warnings;
};

// The parsed value of gpupack.io/gpu-topology for a node of `gpu_count` GPUs:
// per GPU, the group id at each level (-1 = in no group at that level).
// Groups are numbered in the order written.
struct GpuTopology {
  std::vector<int8_t> nvlink;       // one per GPU when `scopes` has nvlink, else empty
  std::vector<int8_t> pcie_switch;  // likewise
  std::vector<int8_t> numa;         // likewise; every GPU is on exactly one NUMA node
  int numa_nodes = 0;               // groups at the numa level
  uint8_t scopes = 0;               // bit (1 << GpuScope) per level given
};
// Format: `<level>=<group>|<group>...` items joined by ';', levels nvlink,
// pcie-switch, numa (each at most once), a group is GPU indices and ranges
// joined by ',' ("0-3", "0,2,4-5"). A GPU is in at most one group per level;
// at the numa level in exactly one. Spaces around tokens are ignored.
// Throws std::invalid_argument naming the value and the problem.
GpuTopology parse_gpu_topology(std::string_view value, int gpu_count);

struct GangSpec {
  std::string name;
  int32_t size = 0;        // members in the gang; 0 = unknown
  int32_t min_member = 0;  // members that must run together; defaults to size; 0 = from the PodGroup
  std::string source;      // the annotation or label that named the group
  friend bool operator==(const GangSpec&, const GangSpec&) = default;
};

// The parsed value of the gpupack.io/assigned-gpus annotation.
struct GpuAssignmentAnnotation {
  std::string node;
  uint32_t gpu_mask = 0;  // bit i = GPU i of the node
  int32_t gpu_milli = 0;  // 0 = not written (take it from the request)
  friend bool operator==(const GpuAssignmentAnnotation&, const GpuAssignmentAnnotation&) = default;
};

struct K8sPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node_name;       // spec.nodeName; "" while pending
  std::string phase;           // status.phase
  std::string scheduler_name;  // spec.schedulerName
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  // Node-independent part of the request. Whole GPUs: gpu_count = n,
  // gpu_milli = 1000. Fractions: gpupack.io/gpu-milli. Shared replicas
  // without gpu-milli: gpu_count 1, gpu_milli 1000 until request_on() knows
  // the node's replica count. MIG-only pods: gpu_count 0, see mig_devices.
  Request request;
  int64_t gpu_memory_mib = 0;                  // gpupack.io/gpu-memory-mib; 0 = not given
  int64_t shared_replicas = 0;                 // nvidia.com/gpu.shared requested
  std::map<std::string, int64_t> mig_devices;  // profile -> count requested
  std::map<std::string, int64_t> extended;     // every other non cpu/memory resource
  std::optional<GangSpec> gang;
  std::optional<GpuAssignmentAnnotation> assigned;
  bool gpu_milli_given = false;  // gpu_milli came from an annotation
  // DRA: the ResourceClaims the pod uses, by name in its namespace
  // (spec.resourceClaims[].resourceClaimName, or the generated name in
  // status.resourceClaimStatuses for a template), and the claim the API made
  // for its extended resources (status.extendedResourceClaimStatus).
  std::vector<std::string> resource_claims;
  std::string extended_resource_claim;
  // What decides whether the pod may be moved (defragmentation): its
  // controller (the ownerReference with controller: true; "" when none),
  // its volumes on the node's own disk (emptyDir, hostPath), its priority
  // class.
  std::string controller_kind, controller_name, controller_uid;
  std::vector<std::string> local_volumes;
  std::string priority_class_name;
  bool deleting = false;       // metadata.deletionTimestamp set (terminating)
  int64_t created_unix_s = 0;  // metadata.creationTimestamp; 0 when absent

  std::string key() const { return namespace_name + "/" + name; }
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  bool is_mig() const { return !mig_devices.empty(); }
};

// A defragmentation reservation: node annotation
// reservation.gpupack.io/<plan>.<step> (written by `gpupack defrag
// --apply`, execute/defrag_executor.h), whose JSON value holds GPUs of the
// node for the next pod of a controller ("for" kind/namespace/name/uid), or
// for one named pod (kind Pod), until `expires` (RFC 3339, UTC).
// node_reservations() returns the node's reservations, expired ones
// included; a malformed one is left out with a message ("node N annotation
// K: why") in `errors`. for_pod(): whether `pod` may use it (same namespace
// and controller UID, or the named pod's UID). reservation_annotation_value()
// writes the value node_reservations() reads (the key is the caller's).
inline constexpr std::string_view kReservationPrefix = "reservation.gpupack.io/";
struct GpuReservation {
  std::string key;  // the annotation key
  std::string for_kind, for_namespace, for_name, for_uid;
  GpuAssignmentAnnotation gpus;
  Request request;  // gpu_count, gpu_milli, cpu_milli, memory_mib
  int64_t expires_unix_s = 0;
  bool for_pod(const K8sPod& pod) const;
};
std::vector<GpuReservation> node_reservations(const K8sNode& node, std::vector<std::string>* errors);
std::string reservation_annotation_value(const GpuReservation& r);

// RFC 3339 (`2024-05-01T10:00:00Z`, fractions, `+02:00`); nullopt if not
// one. Kubernetes timestamps, exec credential expiries, reservation expiries.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& text);
// "2026-12-02T07:01:50Z": whole seconds, UTC.
std::string format_rfc3339(std::chrono::system_clock::time_point t);

// GPU products (node labels nvidia.com/gpu.product, else
// alibabacloud.com/gpu-card-model):
// - find_gpu_model() maps a product string (GFD label such as
//   "NVIDIA-H100-80GB-HBM3", "Tesla-T4", "A100-SXM4-40GB-MIG-1g.5gb-SHARED", an
//   nvidia-smi name, or a catalog name such as "V100M32") to a built-in model:
//   a "-SHARED" suffix (time-slicing/MPS without renaming) and a
//   "-MIG-<profile>" suffix are dropped, then the rest must equal a catalog
//   name or alias after normalize_product_name(); nothing fuzzy. Never
//   returns an unknown pool.
// - A node with GPUs whose product is not built in (or that has no product
//   label) is put in an unknown pool of the process-wide catalog
//   (GpuCatalog::register_unknown), named by the label without "-SHARED"
//   ("unlabeled" without a label) and sized by nvidia.com/gpu.memory (MiB;
//   0 = unknown when absent); K8sNode::warnings says so. When the catalog has
//   no room left (kMaxGpuModels) the node is rejected with that error.
std::optional<GpuModelId> find_gpu_model(std::string_view product, const GpuCatalog& catalog = GpuCatalog::builtin());
// The product without a trailing "-SHARED" (any case) and trailing spaces.
std::string_view gpu_product_pool_label(std::string_view product);

// A DRA ResourceClaim (resource.k8s.io v1, v1beta2 or v1beta1: the
// allocation results have one shape in all three) as far as charging needs
// it: the devices allocated to it and the pods it is reserved for.
struct K8sClaimDevice {
  std::string request;  // the claim's request name
  std::string driver;   // e.g. gpu.nvidia.com
  std::string pool;     // the NVIDIA driver names the pool after the node
  std::string device;   // e.g. gpu-3, gpu-0-mig-1g5gb-19-0
};
struct K8sResourceClaim {
  std::string namespace_name;
  std::string name;
  bool allocated = false;  // status.allocation present
  std::vector<K8sClaimDevice> devices;
  std::vector<std::string> reserved_for;  // pod names (status.reservedFor, resource "pods")
  std::string key() const { return namespace_name + "/" + name; }
};

// A PodGroup of scheduler-plugins (scheduling.x-k8s.io), Volcano
// (scheduling.volcano.sh) or KAI-Scheduler (scheduling.run.ai): the group's
// spec.minMember, the only fact gpupack reads from it.
struct K8sPodGroup {
  std::string namespace_name, name;
  int32_t min_member = 0;
  std::string key() const { return namespace_name + "/" + name; }
};

// A PodDisruptionBudget (policy/v1): which pods of its namespace it selects
// and how many of them may be disrupted now (status.disruptionsAllowed, 0
// when the controller has not said). A null selector selects no pod, an
// empty one every pod of the namespace (policy/v1 semantics).
struct K8sLabelRequirement {
  std::string key, op;  // op: In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
};
struct K8sPdb {
  std::string namespace_name, name;
  bool has_selector = false;
  std::map<std::string, std::string> match_labels;
  std::vector<K8sLabelRequirement> match_expressions;
  int32_t disruptions_allowed = 0;
  std::string key() const { return namespace_name + "/" + name; }
  bool selects(const K8sPod& pod) const;
};

// The controller of an object: the metadata.ownerReferences entry with
// controller: true (kind, name, uid; all empty when none). Throws
// std::invalid_argument naming `object` and the field when the references are
// malformed: not a list of objects, a non-boolean controller, a controller
// without a kind or name, or two controllers.
struct ControllerRef {
  std::string kind, name, uid;
};
ControllerRef read_controller_ref(const std::string& object, const nlohmann::json& metadata);

// Single objects (a parsed JSON value); errors name the object.
K8sNode parse_node(const nlohmann::json& node);
K8sPod parse_pod(const nlohmann::json& pod);
K8sResourceClaim parse_resource_claim(const nlohmann::json& claim);
K8sPodGroup parse_pod_group(const nlohmann::json& group);
K8sPdb parse_pdb(const nlohmann::json& pdb);

// Lists (`{"kind":"List","items":[...]}`, also NodeList/PodList) from text.
// When `rejected` is null the first bad item throws; otherwise bad items are
// skipped and their error messages appended to *rejected. A malformed
// document (not JSON, no items array) always throws, naming `source`. Node
// warnings (K8sNode::warnings) are also appended to *warnings when given,
// prefixed with `source`.
std::vector<K8sNode> parse_node_list(std::string_view json_text, std::string_view source,
                                     std::vector<std::string>* rejected = nullptr,
                                     std::vector<std::string>* warnings = nullptr);
std::vector<K8sPod> parse_pod_list(std::string_view json_text, std::string_view source,
                                   std::vector<std::string>* rejected = nullptr);
std::vector<K8sNode> read_node_list_file(const std::string& path, std::vector<std::string>* rejected = nullptr,
                                         std::vector<std::string>* warnings = nullptr);
std::vector<K8sPod> read_pod_list_file(const std::string& path, std::vector<std::string>* rejected = nullptr);
std::vector<K8sResourceClaim> parse_resource_claim_list(std::string_view json_text, std::string_view source,
                                                        std::vector<std::string>* rejected = nullptr);
std::vector<K8sResourceClaim> read_resource_claim_list_file(const std::string& path,
                                                            std::vector<std::string>* rejected = nullptr);
std::vector<K8sPodGroup> parse_pod_group_list(std::string_view json_text, std::string_view source,
                                              std::vector<std::string>* rejected = nullptr);
std::vector<K8sPodGroup> read_pod_group_list_file(const std::string& path,
                                                  std::vector<std::string>* rejected = nullptr);
std::vector<K8sPdb> parse_pdb_list(std::string_view json_text, std::string_view source,
                                   std::vector<std::string>* rejected = nullptr);
std::vector<K8sPdb> read_pdb_list_file(const std::string& path, std::vector<std::string>* rejected = nullptr);

// The pod's request as it would be charged on `node`: shared replicas become
// ceil(1000 * replicas / node.gpu_replicas) milli of one GPU unless the pod
// gave gpupack.io/gpu-milli.
Request request_on(const K8sPod& pod, const K8sNode& node);

// gpupack.io/assigned-gpus: "<node>:<gpu>[,<gpu>...]" for whole GPUs, with
// "@<milli>" appended for fractions ("node-a:3@250"). GPU indices ascending.
std::string format_assigned_gpus(const GpuAssignmentAnnotation& a);
// Throws std::invalid_argument naming the value.
GpuAssignmentAnnotation parse_assigned_gpus(std::string_view value);
// The annotation a bind writes for `where` on `node_name`.
std::string assigned_gpus_annotation(std::string_view node_name, const Assignment& where);

// Bound pods whose assignment could be rebuilt from annotations.
struct RebuiltPod {
  size_t pod_index = 0;  // index into the pods vector
  Request request;       // request_on(pod, node)
  Assignment assignment;
};
struct RebuiltState {
  std::vector<RebuiltPod> bound;
  // Running pods on a node whose GPUs are not known (no or bad annotation):
  // "ns/name: why". CPU-only pods need no annotation and are in `bound`.
  std::vector<std::string> unattributed;
};

// For every non-terminal pod with spec.nodeName set: finds the node, checks
// the annotation (same node, GPU indices < the node's GPU count, as many GPUs
// as requested, milli matching the request) and returns the assignment.
// O(nodes + pods).
RebuiltState rebuild_assignments(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods);

// Binds a rebuilt state into `state` (whose nodes must be `nodes` in order),
// giving pod i the PodId i. Returns the messages of binds that did not fit.
std::vector<std::string> apply_rebuilt(ClusterState& state, const std::vector<K8sPod>& pods,
                                       const RebuiltState& rebuilt);

}  // namespace gpupack
