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
};

inline nlohmann::json node_json(const NodeShape& s) {
  nlohmann::json alloc = {{"cpu", s.cpu}, {"memory", s.memory}, {"pods", "110"}};
  if (s.gpus > 0) alloc["nvidia.com/gpu"] = std::to_string(s.gpus);
  for (const auto& [p, n] : s.mig) alloc["nvidia.com/mig-" + p] = std::to_string(n);
  nlohmann::json labels = {{"kubernetes.io/hostname", s.name}, {"kubernetes.io/os", "linux"}};
  if (s.gpus > 0 || !s.mig.empty()) labels["nvidia.com/gpu.product"] = s.product;
  if (!s.mig.empty()) labels["nvidia.com/mig.strategy"] = "mixed";
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
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec", spec},
          {"status", {{"phase", s.node.empty() ? "Pending" : "Running"}}}};
}

inline nlohmann::json list_json(std::vector<nlohmann::json> items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

}  // namespace gpupack::testing
