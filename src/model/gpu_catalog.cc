#include "model/gpu_catalog.h"

#include "util/strings.h"

#include <algorithm>
#include <cctype>

namespace gpupack {
namespace {

std::vector<GpuModelSpec> builtin_models() {
  // Figures: deviceQuery output and NVIDIA data sheets, collected in
  // docs/GPU_CATALOG.md. Memory is the usable MiB that NVML / deviceQuery report.
  std::vector<GpuModelSpec> m;
  m.push_back({"P100", {"Tesla P100-PCIE-16GB", "P100-16GB"}, 56, 16281, 732, 4096, false, 0, false, 60});
  m.push_back({"T4", {"Tesla T4"}, 40, 15109, 320, 4096, false, 0, false, 75});
  m.push_back({"V100M16", {"V100-16GB", "Tesla V100-SXM2-16GB"}, 80, 16160, 900, 6144, false, 0, false, 70});
  m.push_back({"V100M32", {"V100-32GB", "Tesla V100-SXM2-32GB"}, 80, 32510, 900, 6144, false, 0, false, 70});
  m.push_back({"A10", {"NVIDIA A10"}, 72, 22516, 600, 6144, false, 0, false, 86});
  // openb's undisclosed models: no figures are published.
  m.push_back({"G1", {}, 0, 0, 0, 0, false, 0, false, 0});
  m.push_back({"G2", {}, 0, 0, 0, 0, false, 0, false, 0});
  m.push_back({"G3", {}, 0, 0, 0, 0, false, 0, false, 0});
  m.push_back({"A100-40GB", {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB"}, 108, 40960, 1555, 40960, true, 7, false, 80});
  m.push_back({"A100-80GB", {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB", "A100-PCIE-80GB"}, 108, 81251, 2039, 40960, true, 7, false, 80});
  m.push_back({"H100-80GB", {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB", "H100"}, 132, 81559, 3352, 51200, true, 7, false, 90});
  // H200: 141 GB and 4.8 TB/s are published; the 50 MiB L2 is inferred from
  // the shared GH100 die and not verified on hardware.
  m.push_back({"H200", {"NVIDIA H200", "H200-141GB", "H200-SXM5-141GB"}, 132, 143771, 4800, 51200, true, 7, true, 90});
  m.push_back({"L4", {"NVIDIA L4"}, 58, 22518, 300, 49152, false, 0, false, 89});
  m.push_back({"L40S", {"NVIDIA L40S"}, 142, 45589, 864, 98304, false, 0, false, 89});
  // A30: MIG facts verified; SMs, bandwidth and L2 are general knowledge, unverified.
  m.push_back({"A30", {"NVIDIA A30", "A30-24GB"}, 56, 24576, 933, 24576, true, 4, true, 80});
  return m;
}

}  // namespace

GpuCatalog::GpuCatalog(std::vector<GpuModelSpec> models) : models_(std::move(models)) {}

const GpuCatalog& GpuCatalog::builtin() {
  static const GpuCatalog catalog(builtin_models());
  return catalog;
}

std::optional<GpuModelId> GpuCatalog::find(std::string_view name) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    if (iequals(models_[i].name, name)) return static_cast<GpuModelId>(i);
    for (const auto& alias : models_[i].aliases) {
      if (iequals(alias, name)) return static_cast<GpuModelId>(i);
    }
  }
  return std::nullopt;
}

std::string GpuCatalog::known_names() const {
  std::string out;
  for (const auto& m : models_) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

}  // namespace gpupack
