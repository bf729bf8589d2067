#include "io/pod_resources.h"

#include <fmt/format.h>

#include <bit>

namespace gpupack {

NodeSpec model_node(const K8sNode& node) {
  NodeSpec spec = node.spec;
  spec.gpu_memory_mib = node.gpu_memory_mib;
  spec.mig_devices.clear();
  for (const auto& [profile, count] : node.mig_devices) spec.mig_devices.push_back({profile, count});
  return spec;
}

Request model_request(const K8sPod& pod, const K8sNode& node) {
  Request req = request_on(pod, node);
  if (req.is_gpu() && pod.gpu_memory_mib > 0) req.gpu_memory_mib = pod.gpu_memory_mib;
  req.mig_devices.clear();
  for (const auto& [profile, count] : pod.mig_devices) req.mig_devices.push_back({profile, count});
  return req;
}

HeldGpus held_gpus(const K8sPod& pod, const K8sNode& node, const Request& req) {
  HeldGpus h;
  if (!req.is_gpu()) return h;
  h.kind = HeldGpus::Kind::kUnknown;
  if (!pod.assigned) return h;
  const GpuAssignmentAnnotation& a = *pod.assigned;
  const int gpus = node.spec.gpu_count;
  if (a.node != pod.node_name) {
    h.why = fmt::format("annotation names node {} but the pod is bound to {}", a.node, pod.node_name);
  } else if (gpus < 32 && (a.gpu_mask >> gpus) != 0) {
    h.why = fmt::format("annotation \"{}\" names a GPU beyond the node's {} GPUs", format_assigned_gpus(a), gpus);
  } else if (std::popcount(a.gpu_mask) != req.gpu_count) {
    h.why = fmt::format("annotation names {} GPUs, the pod requests {}", std::popcount(a.gpu_mask), req.gpu_count);
  } else if ((a.gpu_milli > 0 ? a.gpu_milli : kGpuMilliPerGpu) != req.gpu_milli) {
    h.why = fmt::format("annotation charges {} milli per GPU, the pod requests {}",
                        a.gpu_milli > 0 ? a.gpu_milli : kGpuMilliPerGpu, req.gpu_milli);
  } else {
    h.kind = HeldGpus::Kind::kKnown;
    h.gpu_mask = a.gpu_mask;
  }
  return h;
}

}  // namespace gpupack
