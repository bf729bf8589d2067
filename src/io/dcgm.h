// Prometheus text exposition format (what dcgm-exporter serves on /metrics)
// and the per-GPU / per-pod observations gpupack takes from it.
//
// Contract:
// - parse_prometheus_text() accepts the text format 0.0.4: blank lines,
//   `# HELP name text`, `# TYPE name type`, other `#` comments, and samples
//   `name{label="value",...} value [timestamp_ms]` with optional spaces around
//   labels, a trailing comma, escapes \\ \" \n in label values, values as
//   floats or NaN/+Inf/-Inf. It rejects anything else with
//   std::invalid_argument "<source>:<line>: <what>", and also rejects a label
//   given twice in one sample, a second TYPE for one metric and a series
//   (name + label set) given twice.
// - observe_dcgm() groups DCGM samples (names starting DCGM_FI_ or dcgm_) by
//   GPU entity (hostname, gpu index, UUID, MIG GPU instance) and by pod
//   attribution (namespace, pod, container on that entity). Both label
//   spellings are accepted: Hostname/hostname, UUID/uuid,
//   pod/pod_name, namespace/pod_namespace, container/container_name.
//   A DCGM sample without a usable `gpu` label is an error naming its line;
//   so is an FB_* value that is no memory size (NaN, infinite, negative,
//   1e9 MiB or more). A scrape without any DCGM sample is an error naming
//   the source (an empty or wrong file is never read as "nothing observed").
// - Units are the exporter's: FB_* in MiB, *_UTIL in percent, PROF_* ratios.
// - Pure functions; O(size of the text + samples x log samples).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/gpu_catalog.h"

namespace gpupack {

struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in text order
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  int line = 0;
  // The label's value, or nullptr when absent.
  const std::string* label(std::string_view key) const;
};

struct PromScrape {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // metric -> counter|gauge|histogram|summary|untyped
  std::map<std::string, std::string> help;
};

PromScrape parse_prometheus_text(std::string_view text, std::string_view source);

// Metric names gpupack reads (dcgm-exporter defaults).
namespace dcgm {
inline constexpr std::string_view kFbFree = "DCGM_FI_DEV_FB_FREE";          // MiB
inline constexpr std::string_view kFbUsed = "DCGM_FI_DEV_FB_USED";          // MiB
inline constexpr std::string_view kFbReserved = "DCGM_FI_DEV_FB_RESERVED";  // MiB
inline constexpr std::string_view kGpuUtil = "DCGM_FI_DEV_GPU_UTIL";        // percent
inline constexpr std::string_view kMemCopyUtil = "DCGM_FI_DEV_MEM_COPY_UTIL";
inline constexpr std::string_view kGrEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";  // ratio
inline constexpr std::string_view kSmActive = "DCGM_FI_PROF_SM_ACTIVE";
inline constexpr std::string_view kTensorActive = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE";
inline constexpr std::string_view kDramActive = "DCGM_FI_PROF_DRAM_ACTIVE";
inline constexpr std::string_view kPowerUsage = "DCGM_FI_DEV_POWER_USAGE";  // W
}  // namespace dcgm

// One GPU or MIG GPU instance.
struct GpuEntityKey {
  std::string hostname;
  int gpu = -1;           // index on the host
  std::string uuid;       // parent GPU UUID
  int gpu_instance = -1;  // MIG GPU_I_ID; -1 for the whole GPU
  friend auto operator<=>(const GpuEntityKey&, const GpuEntityKey&) = default;
};

struct DcgmGpuObservation {
  GpuEntityKey key;
  std::string model_name;                 // modelName label, e.g. "NVIDIA H100 80GB HBM3"
  std::optional<GpuModelId> model;        // model_name found in the catalog
  std::string mig_profile;                // GPU_I_PROFILE, "" for whole GPUs
  std::map<std::string, double> metrics;  // metric name -> last value
  std::vector<std::string> pods;          // "ns/pod" attributed to it, sorted, unique
  std::optional<double> metric(std::string_view name) const;
};

struct DcgmPodObservation {
  std::string namespace_name;
  std::string pod;
  std::string container;
  GpuEntityKey gpu;
  std::string mig_profile;
  std::map<std::string, double> metrics;
  std::optional<double> metric(std::string_view name) const;
};

struct DcgmObservations {
  std::vector<DcgmGpuObservation> gpus;  // sorted by key
  std::vector<DcgmPodObservation> pods;  // sorted by namespace, pod, container, gpu
  const DcgmGpuObservation* find_gpu(std::string_view hostname, int gpu, int gpu_instance = -1) const;
};

DcgmObservations observe_dcgm(const PromScrape& scrape, std::string_view source);

}  // namespace gpupack
