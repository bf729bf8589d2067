// GPU model catalog: the GPU models gpupack knows, with their hardware figures.
//
// Contract: the built-in catalog is immutable and process-wide. Each model has
// a small integer id (`GpuModelId`, stable for the life of the process) used in
// the flat arrays of ClusterState, and a `ModelMask` bit for "allowed models"
// sets (an empty mask means any model). Lookup by name accepts the canonical
// name, the openb trace name and common nvidia-smi / product names, ignoring
// case. Figures marked `inferred` are not verified on hardware (see
// docs/GPU_CATALOG.md); the openb models G1..G3 are undisclosed and carry no
// figures (0 = unknown).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupack {

using GpuModelId = uint8_t;
using ModelMask = uint64_t;  // bit i set = model id i allowed; 0 = any model

constexpr ModelMask model_bit(GpuModelId id) { return ModelMask{1} << id; }
constexpr bool model_allowed(ModelMask allowed, GpuModelId id) {
  return allowed == 0 || (allowed & model_bit(id)) != 0;
}

struct GpuModelSpec {
  std::string name;                  // canonical name, e.g. "A100-80GB", "V100M32"
  std::vector<std::string> aliases;  // other accepted spellings
  int sm_count = 0;                  // streaming multiprocessors; 0 = unknown
  int64_t memory_mib = 0;            // usable device memory; 0 = unknown
  int bandwidth_gbps = 0;            // peak memory bandwidth, GB/s; 0 = unknown
  int l2_kib = 0;                    // L2 cache; 0 = unknown
  bool mig_capable = false;
  int max_mig_instances = 0;
  bool inferred = false;             // some figure is inferred, not measured
  int compute_capability = 0;        // x10 (8.0 -> 80); 0 = unknown

  // MPS client cap of the device plugin: 48 from compute capability 7.5
  // (and when unknown), else 16.
  int mps_max_clients() const { return compute_capability == 0 || compute_capability >= 75 ? 48 : 16; }
};

class GpuCatalog {
 public:
  static const GpuCatalog& builtin();

  std::optional<GpuModelId> find(std::string_view name) const;
  const GpuModelSpec& spec(GpuModelId id) const { return models_.at(id); }
  size_t size() const { return models_.size(); }
  // Comma-separated canonical names, for error messages.
  std::string known_names() const;

 private:
  explicit GpuCatalog(std::vector<GpuModelSpec> models);
  std::vector<GpuModelSpec> models_;
};

}  // namespace gpupack
