// Kubernetes-side configuration gpupack generates, and checkers for the
// schemas they must follow.
//
// Contract:
// - Each *_yaml() function validates its input first (throwing
//   std::invalid_argument naming the field and value) and returns YAML text
//   that parses back with yaml-cpp and passes the matching check_*().
// - Each check_*() takes a parsed document and returns the list of schema
//   violations ("path: problem"); empty means valid. Checks cover required
//   keys, types and the value rules of the upstream loaders as summarised in
//   docs/KUBERNETES.md: device-plugin `sharing` (version v1, non-empty
//   resources, replicas >= 2, MPS only for nvidia.com/gpu and <= 48 replicas),
//   mig-parted v1 (version, mig-configs, devices "all" or ints, mig-enabled,
//   mig-devices only when enabled, profile names like 1g.10gb / 1c.2g.20gb+me),
//   descheduler v1alpha2 DeschedulerPolicy as the descheduler's strict loader
//   reads it (exact key names at every level, value types, in-tree plugin
//   names, each enabled plugin configured and at an extension point it
//   implements, DefaultEvictor and Low/HighNodeUtilization argument rules:
//   percents 0..100, the same resources in thresholds and targetThresholds,
//   thresholds <= targets; plus gpupack's rule that nvidia.com/gpu is among
//   the thresholds), KubeSchedulerConfiguration
//   v1 `extenders:` (urlPrefix, weight > 0 with prioritizeVerb, one binder,
//   valid unique managed resources, durations).
// - MIG geometry (whether a layout fits a GPU) is not checked here.
// - Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupack {

// --- NVIDIA device plugin: sharing (time-slicing / MPS) -----------------
struct SharingResource {
  std::string name = "nvidia.com/gpu";
  int32_t replicas = 2;
};

struct SharingConfig {
  enum class Mode { kTimeSlicing, kMps };
  Mode mode = Mode::kTimeSlicing;
  bool rename_by_default = false;
  std::optional<bool> fail_requests_greater_than_one;
  std::vector<SharingResource> resources;
  std::string mig_strategy = "none";  // none | single | mixed
};

std::string device_plugin_config_yaml(const SharingConfig& cfg);
std::vector<std::string> check_device_plugin_config(const YAML::Node& doc);

// --- nvidia-mig-parted v1 -------------------------------------------------
struct MigPartedEntry {
  std::vector<std::string> device_filter;    // PCI ids such as "0x233010DE"; empty = any
  std::optional<std::vector<int>> devices;   // nullopt = "all"
  bool mig_enabled = true;
  std::map<std::string, int> mig_devices;    // profile -> count per GPU
};
using MigPartedConfig = std::map<std::string, std::vector<MigPartedEntry>>;

// "1g.10gb=2,3g.40gb=1" -> {"1g.10gb":2, "3g.40gb":1}; throws naming the text.
std::map<std::string, int> parse_profile_counts(std::string_view text);
bool valid_mig_profile_name(std::string_view profile);

std::string mig_parted_config_yaml(const MigPartedConfig& cfg);
std::vector<std::string> check_mig_parted_config(const YAML::Node& doc);

// --- descheduler policy ----------------------------------------------------
struct DeschedulerConfig {
  enum class Strategy { kLowNodeUtilization, kHighNodeUtilization };
  Strategy strategy = Strategy::kLowNodeUtilization;
  std::string profile_name = "gpupack";
  // Percent of allocatable per resource ("cpu", "memory", "pods", "nvidia.com/gpu").
  std::map<std::string, int> thresholds = {{"cpu", 20}, {"memory", 20}, {"pods", 20}, {"nvidia.com/gpu", 20}};
  // Only for LowNodeUtilization.
  std::map<std::string, int> target_thresholds = {{"cpu", 50}, {"memory", 50}, {"pods", 50}, {"nvidia.com/gpu", 50}};
};

// One profile: DefaultEvictor (nodeFit) and the strategy, enabled at the
// balance extension point (High ignores target_thresholds). Throws on
// percents outside 0..100, thresholds without nvidia.com/gpu, and Low targets
// that differ in resources or sit below a threshold.
std::string descheduler_policy_yaml(const DeschedulerConfig& cfg);
std::vector<std::string> check_descheduler_policy(const YAML::Node& doc);

// --- KubeSchedulerConfiguration with the gpupack extender ----------------------
struct SchedulerExtenderConfig {
  std::string scheduler_name = "gpupack-scheduler";
  std::string url_prefix = "http://127.0.0.1:8888/gpupack";
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  std::string preempt_verb = "preempt";
  int64_t weight = 2;
  bool node_cache_capable = true;
  bool ignorable = false;
  std::string http_timeout = "10s";
  std::vector<std::string> managed_resources = {"nvidia.com/gpu", "nvidia.com/gpu.shared"};
  bool leader_elect = false;
};

std::string scheduler_config_yaml(const SchedulerExtenderConfig& cfg);
std::vector<std::string> check_scheduler_config(const YAML::Node& doc);

// A ConfigMap carrying `text` under `key`.
std::string configmap_yaml(std::string_view name, std::string_view ns, std::string_view key, std::string_view text);

}  // namespace gpupack
