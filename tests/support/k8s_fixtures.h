// Test support: Kubernetes Node and Pod objects in the shape `kubectl get -o
// json` prints, for the server and analyze tests.
#pragma once

// Tests fill NodeShape/PodShape with designated initializers, naming only
// what matters to them.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace gpupack::testing {

struct NodeShape {
  std::string name;
  std::string product = "NVIDIA-A100-SXM4-80GB";  // nvidia.com/gpu.product
  int gpus = 8;
  std::string cpu = "96";
  std::string memory = "512Gi";
  std::map<std::string, int> mig;                  // profile -> allocatable
  std::map<std::string, std::string> annotations;  // e.g. gpupack.io/gpu-topology
  std::map<std::string, std::string> labels;       // added to the defaults
};

inline nlohmann::json node_json(const NodeShape& s) {
  nlohmann::json alloc = {{"cpu", s.cpu}, {"memory", s.memory}, {"pods", "110"}};
  if (s.gpus > 0) alloc["nvidia.com/gpu"] = std::to_string(s.gpus);
  for (const auto& [p, n] : s.mig) alloc["nvidia.com/mig-" + p] = std::to_string(n);
  nlohmann::json labels = {{"kubernetes.io/hostname", s.name}, {"kubernetes.io/os", "linux"}};
  if (s.gpus > 0 || !s.mig.empty()) labels["nvidia.com/gpu.product"] = s.product;
  if (!s.mig.empty()) labels["nvidia.com/mig.strategy"] = "mixed";
  for (const auto& [k, v] : s.labels) labels[k] = v;
  nlohmann::json meta = {{"name", s.name}, {"labels", labels}, {"creationTimestamp", nullptr}};
  if (!s.annotations.empty()) meta["annotations"] = s.annotations;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", meta},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"capacity", alloc}, {"allocatable", alloc}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

struct PodShape {
  std::string ns = "ml";
  std::string name;
  std::string uid;
  std::string cpu = "4";
  std::string memory = "16Gi";
  int gpus = 0;                    // nvidia.com/gpu
  int gpu_milli = 0;               // gpupack.io/gpu-milli (fraction of one GPU when gpus == 0)
  int64_t gpu_memory_mib = 0;      // gpupack.io/gpu-memory-mib
  std::string models;              // gpupack.io/gpu-models
  std::map<std::string, int> mig;  // nvidia.com/mig-<profile>
  std::string node;                // spec.nodeName
  std::string assigned;            // gpupack.io/assigned-gpus
  std::map<std::string, std::string> extra_limits;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;  // any others (gpupack.io/gpu-scope, ...)
  std::string owner;                               // controller name ("" = none); its UID is "uid-<owner>"
  std::string owner_kind = "ReplicaSet";
};

inline nlohmann::json pod_json(const PodShape& s) {
  nlohmann::json limits = {{"cpu", s.cpu}, {"memory", s.memory}};
  if (s.gpus > 0) limits["nvidia.com/gpu"] = std::to_string(s.gpus);
  for (const auto& [p, n] : s.mig) limits["nvidia.com/mig-" + p] = std::to_string(n);
  for (const auto& [k, v] : s.extra_limits) limits[k] = v;
  nlohmann::json ann = nlohmann::json::object();
  if (s.gpu_milli > 0) ann["gpupack.io/gpu-milli"] = std::to_string(s.gpu_milli);
  if (s.gpu_memory_mib > 0) ann["gpupack.io/gpu-memory-mib"] = std::to_string(s.gpu_memory_mib);
  if (!s.models.empty()) ann["gpupack.io/gpu-models"] = s.models;
  if (!s.assigned.empty()) ann["gpupack.io/assigned-gpus"] = s.assigned;
  for (const auto& [k, v] : s.annotations) ann[k] = v;
  nlohmann::json spec = {
      {"schedulerName", "gpupack-scheduler"},
      {"containers",
       {{{"name", "main"}, {"image", "trainer:1"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}};
  if (!s.node.empty()) spec["nodeName"] = s.node;
  nlohmann::json meta = {{"name", s.name},
                         {"namespace", s.ns},
                         {"uid", s.uid.empty() ? "uid-" + s.name : s.uid},
                         {"annotations", ann},
                         {"creationTimestamp", nullptr}};
  if (!s.labels.empty()) meta["labels"] = s.labels;
  if (!s.owner.empty())
    meta["ownerReferences"] = nlohmann::json::array({{{"apiVersion", "apps/v1"},
                                                      {"kind", s.owner_kind},
                                                      {"name", s.owner},
                                                      {"uid", "uid-" + s.owner},
                                                      {"controller", true}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec", spec},
          {"status", {{"phase", s.node.empty() ? "Pending" : "Running"}}}};
}

inline nlohmann::json list_json(std::vector<nlohmann::json> items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

// An allocated claim as the API shows it (shape of a real NVIDIA DRA driver
// allocation: request, driver, pool = node name, device).
inline nlohmann::json claim_json(const std::string& ns, const std::string& name,
                                 const std::vector<std::string>& devices, const std::vector<std::string>& reserved_for,
                                 const std::string& driver = "gpu.nvidia.com") {
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& d : devices)
    results.push_back({{"request", "gpus"}, {"driver", driver}, {"pool", "node-a"}, {"device", d}});
  nlohmann::json reserved = nlohmann::json::array();
  for (const std::string& p : reserved_for) reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "u-" + p}});
  nlohmann::json request = {{"name", "gpus"},
                            {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", devices.size()}}}};
  nlohmann::json c;
  c["apiVersion"] = "resource.k8s.io/v1";
  c["kind"] = "ResourceClaim";
  c["metadata"] = {{"name", name}, {"namespace", ns}};
  c["spec"]["devices"]["requests"] = nlohmann::json::array({request});
  c["status"]["reservedFor"] = reserved;
  if (!devices.empty()) {
    nlohmann::json term = {
        {"matchFields",
         nlohmann::json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"node-a"}}}})}};
    c["status"]["allocation"]["devices"]["results"] = results;
    c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"] = nlohmann::json::array({term});
  }
  return c;
}

// A pod using claims by name (resourceClaimName) and through a template
// (the generated name in status.resourceClaimStatuses).
inline nlohmann::json pod_with_claims(PodShape shape, const std::vector<std::string>& claim_names,
                                      const std::map<std::string, std::string>& from_templates = {}) {
  nlohmann::json p = pod_json(shape);
  nlohmann::json refs = nlohmann::json::array();
  for (const std::string& c : claim_names) refs.push_back({{"name", "ref-" + c}, {"resourceClaimName", c}});
  nlohmann::json statuses = nlohmann::json::array();
  for (const auto& [ref, generated] : from_templates) {
    refs.push_back({{"name", ref}, {"resourceClaimTemplateName", "tmpl"}});
    statuses.push_back({{"name", ref}, {"resourceClaimName", generated}});
  }
  p["spec"]["resourceClaims"] = refs;
  if (!statuses.empty()) p["status"]["resourceClaimStatuses"] = statuses;
  return p;
}

}  // namespace gpupack::testing
