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
//   descheduler v1alpha2 DeschedulerPolicy as the descheduler's strict loader
//   reads it (exact key names at every level, value types, in-tree plugin
//   names, each enabled plugin configured and at an extension point it
//   implements, DefaultEvictor and Low/HighNodeUtilization argument rules:
//   percents 0..100, the same resources in thresholds and targetThresholds,
//   thresholds <= targets; plus gpupack's rule that nvidia.com/gpu is among
//   the thresholds), KubeSchedulerConfiguration
//   v1beta1 .. v1 (the apiVersion a Kubernetes release serves, known
//   top-level keys, profiles with a schedulerName, `extenders:` with
//   urlPrefix, weight > 0 with prioritizeVerb, one binder, valid unique
//   managed resources, durations), DRA DeviceClass / ResourceClaimTemplate
//   (resource.k8s.io v1 and v1beta2 shapes).
// - The nvidia-mig-parted schema (and MIG geometry) is mig/'s, not here.
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
// The schema's types, writer and validator live in mig/mig_parted_config.h
// (MigPartedEntry, MigPartedConfig, to_yaml, validate_mig_parted_config).

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
// Kubernetes releases `config scheduler` writes for: 1.20 .. 1.34.
inline constexpr int kSchedulerMinKubeMinor = 20;
inline constexpr int kSchedulerMaxKubeMinor = 34;

struct SchedulerExtenderConfig {
  int kube_minor = kSchedulerMaxKubeMinor;  // Kubernetes 1.<kube_minor>
  std::string scheduler_name = "gpupack-scheduler";
  std::string url_prefix = "http://127.0.0.1:8888/gpupack";
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  std::string preempt_verb = "preempt";
  int64_t weight = 2;
  // true: the scheduler sends node names only, so gpupack must know every
  // node by the scheduler's name (serve in API mode, not --nodes files).
  bool node_cache_capable = false;
  bool ignorable = false;
  std::string http_timeout = "10s";
  // Empty (the default): every pod of the profile reaches the extender. When
  // set, kube-scheduler calls the extender only for pods whose containers
  // request or limit one of these, so pods that ask for GPUs only through
  // gpupack.io annotations skip it (see scheduler_config_warnings).
  std::vector<std::string> managed_resources;
  bool leader_elect = false;
};

// "1.28", "v1.28" or "1.28.3" -> 28. Throws std::invalid_argument naming the
// text when it is not such a version or lies outside 1.<lo> .. 1.<hi>.
int parse_kube_minor(std::string_view version, int lo, int hi);
// The newest kubescheduler.config.k8s.io version Kubernetes 1.<minor>
// serves: v1beta1 (1.20, 1.21), v1beta2 (1.22), v1beta3 (1.23, 1.24), v1
// (1.25+). Throws outside kSchedulerMinKubeMinor .. kSchedulerMaxKubeMinor.
std::string scheduler_config_api_version(int kube_minor);
// Does Kubernetes 1.<minor> read `api_version` (v1beta1 1.19-1.22, v1beta2
// 1.22-1.27, v1beta3 1.23-1.28, v1 1.25+)?
bool scheduler_config_api_served(std::string_view api_version, int kube_minor);

std::string scheduler_config_yaml(const SchedulerExtenderConfig& cfg);
// What a user should know about `cfg` (managed resources that let
// annotation-only GPU pods bypass gpupack; nodeCacheCapable's naming
// requirement); empty when nothing.
std::vector<std::string> scheduler_config_warnings(const SchedulerExtenderConfig& cfg);
// Accepts each API version's shape (v1beta1 .. v1); with `kube_minor`, also
// requires an apiVersion that release serves.
std::vector<std::string> check_scheduler_config(const YAML::Node& doc, std::optional<int> kube_minor = std::nullopt);

// --- Dynamic Resource Allocation (resource.k8s.io/v1) ----------------------
// Request forms of gpupack as DRA objects for the NVIDIA DRA driver
// (driver gpu.nvidia.com; device attribute `type` "gpu" or "mig", MIG
// attribute `profile`, capacity `memory`): DeviceClasses gpu.nvidia.com and
// mig.nvidia.com, a ResourceClaimTemplate for whole GPUs, a shared
// ResourceClaim for fractions (pods that name one claim share its GPU; a
// template would give each pod its own) and a ResourceClaimTemplate per MIG
// profile. resource.k8s.io/v1 is served from Kubernetes 1.34.
inline constexpr int kDraMinKubeMinor = 34;
inline constexpr int kDraMaxKubeMinor = 36;

struct DraConfig {
  int kube_minor = kDraMinKubeMinor;
  std::string ns = "default";
  int whole_gpus = 1;             // GPUs per claim of the whole-GPU template (1..64)
  int64_t shared_memory_mib = 0;  // shared claim: GPU memory at least this (0 = any GPU)
  std::string mig_profile = "1g.10gb";
  int mig_count = 1;  // MIG devices per claim (1..7)
};

// Multi-document YAML ("---" between objects); throws std::invalid_argument
// naming the field for values out of range or a bad MIG profile name.
std::string dra_config_yaml(const DraConfig& cfg);
// One object (DeviceClass, ResourceClaim or ResourceClaimTemplate of
// resource.k8s.io/v1): known keys at each level, DNS names, requests with
// exactly one of `exactly` / `firstAvailable`, a deviceClassName,
// allocationMode ExactCount (count >= 1) or All (no count), CEL selectors,
// constraints naming existing requests.
std::vector<std::string> check_dra_object(const YAML::Node& doc);

// A ConfigMap carrying `text` under `key`.
std::string configmap_yaml(std::string_view name, std::string_view ns, std::string_view key, std::string_view text);

}  // namespace gpupack
