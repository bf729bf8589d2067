// Kubernetes nodes and pods translated once into the engine's types, with
// everything a running pod holds, whoever scheduled it.
//
// Contract:
// - model_node(): the node's NodeSpec (io/kubectl.h parse_node) plus the
//   GPU memory the node reports (nvidia.com/gpu.memory, else the catalog's)
//   and the MIG devices it advertises (nvidia.com/mig-<profile>, counted).
// - model_request(): request_on(pod, node) plus the pod's MIG devices and
//   GPU memory per GPU (gpupack.io/gpu-memory-mib).
//   Shared replicas (nvidia.com/gpu.shared) become a share of one GPU by the
//   node's replica count; whole GPUs (nvidia.com/gpu) are whole GPUs.
// - held_gpus(): what a bound pod's annotation says about its GPUs:
//   kKnown with the mask when gpupack.io/assigned-gpus names this node, as
//   many GPUs as requested and the requested milli; kUnknown when the pod
//   holds GPUs but says nothing usable (a pod another scheduler placed, a
//   device plugin chose the GPUs), with the reason in `why`; kNone for pods
//   without GPUs.
// - apply_resource_claims(): the GPUs DRA allocated to bound pods through
//   ResourceClaims (driver gpu.nvidia.com) become part of those pods, as if
//   they had asked for them as resources: a full GPU device `gpu-<i>` adds a
//   whole GPU with a known id (what gpupack.io/assigned-gpus says for
//   gpupack's own pods), a MIG device `gpu-<i>-mig-<profile>-<gi>-<start>`
//   one MIG device of that profile. The claim the API made for a pod's
//   nvidia.com/gpu request (extendedResourceClaimStatus) names the ids of
//   GPUs the pod already asks for. A claim shared by several pods is
//   charged once, to the first of them in `pods`. Returns a message per
//   thing it cannot use ("ns/pod: why": a claim not in `claims`, a device
//   name not in the driver's forms, a MIG profile no GPU model has, ids that
//   disagree with the pod's annotation); the pod keeps what could be used.
// - Pure functions of their arguments (apply_resource_claims edits only
//   `pods`); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/kubectl.h"
#include "model/node.h"
#include "model/request.h"

namespace gpupack {

NodeSpec model_node(const K8sNode& node);
Request model_request(const K8sPod& pod, const K8sNode& node);

struct HeldGpus {
  enum class Kind : uint8_t { kNone, kKnown, kUnknown };
  Kind kind = Kind::kNone;
  uint32_t gpu_mask = 0;  // kKnown: bit i = GPU i
  std::string why;        // kUnknown: why the annotation could not be used ("" = no annotation)
};
HeldGpus held_gpus(const K8sPod& pod, const K8sNode& node, const Request& req);

std::vector<std::string> apply_resource_claims(std::vector<K8sPod>& pods, const std::vector<K8sResourceClaim>& claims);

}  // namespace gpupack
