// GPU model catalog: the GPU models gpupack knows, with their hardware figures.
//
// Contract:
// - The process-wide catalog (`builtin()`) holds the built-in models
//   (docs/GPU_CATALOG.md) followed by "unknown pools": models registered at
//   run time for GPU product labels that match no built-in model, so that such
//   GPUs are never read as another model. Entries are append-only: an id
//   (`GpuModelId`, an index) and the spec behind it never change once
//   returned, for the life of the process (or of the catalog object).
// - At most kMaxGpuModels models in all, built-in included: each model owns a
//   bit of `ModelMask` ("allowed models" sets; an empty mask means any model).
//   register_unknown() past that limit throws std::length_error naming the
//   label and the limit.
// - Lookup: find() matches a canonical name or alias exactly, ignoring ASCII
//   case; find_product() matches a GPU product string (nvidia-smi name or the
//   gpu-feature-discovery label, e.g. "NVIDIA H100 80GB HBM3" or
//   "NVIDIA-H100-80GB-HBM3") exactly after normalize_product_name() of both
//   sides. Neither is fuzzy (no prefix stripping, no substrings) and neither
//   returns an unknown pool: what a pod or a config file names never depends
//   on which nodes were read before. find_unknown_pool() looks pools up.
// - Figures marked `inferred` are not verified on hardware (see
//   docs/GPU_CATALOG.md); 0 means unknown. The openb models G1..G3 are
//   undisclosed and carry no figures; unknown pools carry only the memory the
//   node reported.
// - Thread-safety: every const member may run concurrently with
//   register_unknown() (readers take no lock: entries are published with
//   release/acquire ordering and never modified after). register_unknown()
//   serializes on a mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpupack {

using GpuModelId = uint8_t;
using ModelMask = uint64_t;  // bit i set = model id i allowed; 0 = any model

// Models in one catalog, built-in and unknown pools together (ModelMask bits).
inline constexpr size_t kMaxGpuModels = 64;

constexpr ModelMask model_bit(GpuModelId id) { return ModelMask{1} << id; }
constexpr bool model_allowed(ModelMask allowed, GpuModelId id) {
  return allowed == 0 || (allowed & model_bit(id)) != 0;
}

struct GpuModelSpec {
  std::string name;                  // canonical name, e.g. "A100-80GB", "V100M32"
  std::vector<std::string> aliases;  // other accepted spellings (nvidia-smi product names)
  int sm_count = 0;                  // streaming multiprocessors; 0 = unknown
  int64_t memory_mib = 0;            // usable device memory; 0 = unknown
  int bandwidth_gbps = 0;            // peak memory bandwidth, GB/s; 0 = unknown
  int l2_kib = 0;                    // L2 cache; 0 = unknown
  bool mig_capable = false;
  int max_mig_instances = 0;
  bool inferred = false;       // some figure is inferred, not measured
  int compute_capability = 0;  // x10 (8.0 -> 80); 0 = unknown
  bool unknown_pool = false;   // registered at run time for an unrecognized product

  // MPS client cap of the device plugin: 48 from compute capability 7.5
  // (and when unknown), else 16.
  int mps_max_clients() const { return compute_capability == 0 || compute_capability >= 75 ? 48 : 16; }
};

// Lower case, whitespace -> '-', characters outside [a-z0-9-_.] dropped: the
// sanitising gpu-feature-discovery applies to nvidia.com/gpu.product, plus
// case folding. "NVIDIA A100-SXM4-40GB" -> "nvidia-a100-sxm4-40gb".
std::string normalize_product_name(std::string_view product);

class GpuCatalog {
 public:
  // The process-wide catalog. builtin_mutable() is the same object; its only
  // use is register_unknown() (the Kubernetes node reader).
  static const GpuCatalog& builtin();
  static GpuCatalog& builtin_mutable();
  // A fresh catalog holding only the built-in models (tests; tools that must
  // not touch the process-wide registry).
  static std::unique_ptr<GpuCatalog> make_builtin_copy();

  GpuCatalog(const GpuCatalog&) = delete;
  GpuCatalog& operator=(const GpuCatalog&) = delete;

  std::optional<GpuModelId> find(std::string_view name) const;
  std::optional<GpuModelId> find_product(std::string_view product) const;
  // The unknown pool registered under `label` (compared as find_product does).
  std::optional<GpuModelId> find_unknown_pool(std::string_view label) const;

  // Throws std::out_of_range for an id not in the catalog.
  const GpuModelSpec& spec(GpuModelId id) const;
  size_t size() const { return size_.load(std::memory_order_acquire); }
  size_t builtin_size() const { return builtin_count_; }
  bool is_unknown_pool(GpuModelId id) const { return id >= builtin_count_ && id < size(); }
  // Comma-separated canonical names of the built-in models, for error messages.
  std::string known_names() const;

  struct Registration {
    GpuModelId id = 0;
    bool created = false;    // false: the label already had a pool
    int64_t memory_mib = 0;  // the pool's memory (the first registration's)
  };
  // The unknown pool named `label` (a GPU product label that matches no
  // built-in model), created on first use with `memory_mib` per GPU (0 =
  // unknown). Throws std::invalid_argument for an empty label, a label longer
  // than 63 characters (a Kubernetes label value), a label that is a built-in
  // model or a negative memory; std::length_error when the catalog is full.
  Registration register_unknown(std::string_view label, int64_t memory_mib);
  // For /metrics: how many unknown pools exist and their names, in
  // registration order.
  size_t unknown_pool_count() const { return size() - builtin_count_; }
  std::vector<std::string> unknown_pool_names() const;

 private:
  explicit GpuCatalog(std::vector<GpuModelSpec> models);

  std::array<GpuModelSpec, kMaxGpuModels> models_;
  size_t builtin_count_ = 0;
  std::atomic<size_t> size_{0};
  // normalize_product_name() of every built-in name and alias -> id; immutable.
  std::vector<std::pair<std::string, GpuModelId>> product_keys_;
  std::array<std::string, kMaxGpuModels> pool_keys_;  // normalized label per unknown pool
  std::mutex register_mu_;
};

}  // namespace gpupack
