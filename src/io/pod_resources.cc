#include "io/pod_resources.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "mig/mig_geometry.h"

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

namespace {

constexpr std::string_view kNvidiaGpuDriver = "gpu.nvidia.com";

// A GPU device of the NVIDIA DRA driver, from its name.
struct DraGpuDevice {
  int gpu = -1;             // the parent GPU's index on the node
  std::string mig_profile;  // "" = the full GPU
};

std::optional<int> leading_int(std::string_view& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || v < 0) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return v;
}

// Profile names without their punctuation ("1g.10gb+me" -> "1g10gbme"), as
// the driver writes them into device names.
std::string profile_key(std::string_view name) {
  std::string k;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

std::optional<std::string> mig_profile_named(std::string_view key) {
  for (const MigGeometry& g : all_mig_geometries())
    for (const MigProfile& p : g.profiles)
      if (profile_key(p.name) == key) return p.name;
  return std::nullopt;
}

// "gpu-<i>" or "gpu-<i>-mig-<profile>-<gi>-<start>"; "" in `why` when read.
DraGpuDevice read_device_name(std::string_view name, std::string* why) {
  DraGpuDevice d;
  std::string_view s = name;
  if (s.substr(0, 4) != "gpu-") {
    *why = fmt::format("device \"{}\" is not a GPU device name (gpu-<index>[-mig-...])", name);
    return d;
  }
  s.remove_prefix(4);
  std::optional<int> gpu = leading_int(s);
  if (!gpu || *gpu >= 32) {
    *why = fmt::format("device \"{}\": no GPU index", name);
    return d;
  }
  d.gpu = *gpu;
  if (s.empty()) return d;
  if (s.substr(0, 5) != "-mig-") {
    *why = fmt::format("device \"{}\" is neither gpu-<index> nor gpu-<index>-mig-<profile>-<gi>-<start>", name);
    return d;
  }
  s.remove_prefix(5);
  // <profile>-<gi>-<start>: the profile is everything before the last two fields.
  const size_t last = s.rfind('-');
  const size_t before = last == std::string_view::npos || last == 0 ? std::string_view::npos : s.rfind('-', last - 1);
  if (before == std::string_view::npos || before == 0) {
    *why = fmt::format("device \"{}\": expected gpu-<index>-mig-<profile>-<gi>-<start>", name);
    return d;
  }
  const std::string key = profile_key(s.substr(0, before));
  std::optional<std::string> profile = mig_profile_named(key);
  if (!profile) {
    *why = fmt::format("device \"{}\": no GPU model has a MIG profile \"{}\"", name, s.substr(0, before));
    return d;
  }
  d.mig_profile = *profile;
  return d;
}

}  // namespace

std::vector<std::string> apply_resource_claims(std::vector<K8sPod>& pods, const std::vector<K8sResourceClaim>& claims) {
  std::vector<std::string> messages;
  std::map<std::string, const K8sResourceClaim*> by_key;
  for (const K8sResourceClaim& c : claims) by_key.emplace(c.key(), &c);
  std::set<std::string> charged;  // claim keys already charged to a pod
  for (K8sPod& pod : pods) {
    if (pod.resource_claims.empty() || pod.terminal()) continue;
    auto note = [&](const std::string& why) { messages.push_back(fmt::format("{}: {}", pod.key(), why)); };
    uint32_t claimed_mask = 0;  // full GPUs from the claim of the pod's nvidia.com/gpu request
    uint32_t extra_mask = 0;    // full GPUs from the pod's own claims
    bool any = false;
    for (const std::string& name : pod.resource_claims) {
      const std::string key = pod.namespace_name + "/" + name;
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        note(fmt::format("ResourceClaim {} is not in the claim list; its devices are not charged", name));
        continue;
      }
      const K8sResourceClaim& claim = *it->second;
      if (!claim.allocated || !charged.insert(key).second) continue;
      const bool extended = name == pod.extended_resource_claim;
      for (const K8sClaimDevice& dev : claim.devices) {
        if (dev.driver != kNvidiaGpuDriver) continue;
        std::string why;
        DraGpuDevice d = read_device_name(dev.device, &why);
        if (!why.empty()) {
          note(fmt::format("ResourceClaim {}: {}", name, why));
          continue;
        }
        any = true;
        if (!d.mig_profile.empty()) {
          ++pod.mig_devices[d.mig_profile];
        } else if (extended) {
          claimed_mask |= 1u << d.gpu;
        } else {
          extra_mask |= 1u << d.gpu;
        }
      }
    }
    if (!any) continue;
    const uint32_t mask = claimed_mask | extra_mask;
    if (mask == 0) continue;
    // The pod's nvidia.com/gpu request is met by its extended-resource claim;
    // devices of its other claims come on top.
    const int requested = pod.request.gpu_milli == kGpuMilliPerGpu ? pod.request.gpu_count : 0;
    if (claimed_mask == 0 && requested > 0) {
      // Device-plugin GPUs (ids unknown) beside DRA ones: charged by count,
      // on GPUs the engine chooses, as for any pod whose ids are unknown.
      pod.request.gpu_count = requested + std::popcount(extra_mask);
      pod.assigned.reset();
      continue;
    }
    if (claimed_mask != 0 && std::popcount(claimed_mask) != requested) {
      note(fmt::format("the claim for its nvidia.com/gpu request holds {} GPUs, the pod requests {}",
                       std::popcount(claimed_mask), requested));
    }
    if (pod.request.gpu_count > 0 && pod.request.gpu_milli < kGpuMilliPerGpu) {
      note("holds DRA GPUs and a share of a GPU; only the DRA GPUs are charged");
    }
    pod.request.gpu_count = std::popcount(mask);
    pod.request.gpu_milli = kGpuMilliPerGpu;
    pod.shared_replicas = 0;
    pod.gpu_milli_given = false;
    if (pod.assigned && (pod.assigned->node != pod.node_name || pod.assigned->gpu_mask != mask)) {
      note(fmt::format("annotation \"{}\" disagrees with the GPUs DRA allocated; DRA's are charged",
                       format_assigned_gpus(*pod.assigned)));
    }
    if (pod.node_name.empty()) {
      pod.assigned.reset();  // allocated ahead of binding: ids are known only once it is bound
    } else {
      pod.assigned = GpuAssignmentAnnotation{pod.node_name, mask, 0};
    }
  }
  return messages;
}

}  // namespace gpupack
