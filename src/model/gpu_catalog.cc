#include "model/gpu_catalog.h"

#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace gpupack {
namespace {

constexpr size_t kMaxLabelChars = 63;  // a Kubernetes label value

std::vector<GpuModelSpec> builtin_models() {
  // Figures and sources: docs/GPU_CATALOG.md. Memory is the usable MiB that
  // NVML / deviceQuery report. Aliases are nvidia-smi product names; the
  // gpu-feature-discovery label is the same string with spaces as '-', which
  // find_product() accepts. Ids are indices: append, never reorder.
  std::vector<GpuModelSpec> m;
  // name, aliases, SMs, memory MiB, GB/s, L2 KiB, MIG, max MIG instances, inferred, CC x10
  m.push_back({"P100",
               {"Tesla P100-PCIE-16GB", "Tesla P100-SXM2-16GB", "P100-16GB"},
               56,
               16281,
               732,
               4096,
               false,
               0,
               false,
               60});
  m.push_back({"T4", {"Tesla T4"}, 40, 15109, 320, 4096, false, 0, false, 75});
  m.push_back({"V100M16",
               {"V100-16GB", "Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB"},
               80,
               16160,
               900,
               6144,
               false,
               0,
               false,
               70});
  m.push_back({"V100M32",
               {"V100-32GB", "Tesla V100-SXM2-32GB", "Tesla V100-PCIE-32GB"},
               80,
               32510,
               900,
               6144,
               false,
               0,
               false,
               70});
  m.push_back({"A10", {"NVIDIA A10"}, 72, 22516, 600, 6144, false, 0, false, 86});
  // openb's undisclosed models: no figures are published.
  m.push_back({"G1", {}, 0, 0, 0, 0, false, 0, false, 0});
  m.push_back({"G2", {}, 0, 0, 0, 0, false, 0, false, 0});
  m.push_back({"G3", {}, 0, 0, 0, 0, false, 0, false, 0});
  // The A100 40GB PCIe card has the SXM4 part's SMs, memory, bandwidth and L2.
  m.push_back({"A100-40GB",
               {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"},
               108,
               40960,
               1555,
               40960,
               true,
               7,
               false,
               80});
  m.push_back({"A100-80GB", {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"}, 108, 81251, 2039, 40960, true, 7, false, 80});
  m.push_back({"H100-80GB", {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"}, 132, 81559, 3352, 51200, true, 7, false, 90});
  // H200: 141 GB and 4.8 TB/s are published; the 50 MiB L2 is inferred from
  // the shared GH100 die and not verified on hardware.
  m.push_back({"H200", {"NVIDIA H200", "H200-141GB", "H200-SXM5-141GB"}, 132, 143771, 4800, 51200, true, 7, true, 90});
  m.push_back({"L4", {"NVIDIA L4"}, 58, 22518, 300, 49152, false, 0, false, 89});
  m.push_back({"L40S", {"NVIDIA L40S"}, 142, 45589, 864, 98304, false, 0, false, 89});
  // A30: MIG facts verified; SMs, bandwidth and L2 are general knowledge, unverified.
  m.push_back({"A30", {"NVIDIA A30", "A30-24GB"}, 56, 24576, 933, 24576, true, 4, true, 80});
  // Below: data-sheet figures (memory size, bandwidth) with SMs, L2 and usable
  // memory from public specifications not checked against deviceQuery output;
  // all flagged inferred (docs/GPU_CATALOG.md lists which figure is which).
  m.push_back(
      {"A100-80GB-PCIE", {"NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"}, 108, 81920, 1935, 40960, true, 7, true, 80});
  m.push_back({"H100-PCIE", {"NVIDIA H100 PCIe"}, 114, 81559, 2039, 51200, true, 7, true, 90});
  m.push_back({"H100-NVL", {"NVIDIA H100 NVL"}, 132, 95830, 3938, 51200, true, 7, true, 90});
  m.push_back({"H200-NVL", {"NVIDIA H200 NVL"}, 132, 143771, 4800, 51200, true, 7, true, 90});
  m.push_back({"H20", {"NVIDIA H20"}, 78, 97871, 4000, 61440, true, 7, true, 90});
  m.push_back({"GH200", {"NVIDIA GH200 480GB"}, 132, 97871, 4000, 51200, true, 7, true, 90});
  m.push_back({"B200", {"NVIDIA B200"}, 148, 183359, 8000, 129024, true, 7, true, 100});
  m.push_back({"L40", {"NVIDIA L40"}, 142, 46068, 864, 98304, false, 0, true, 89});
  m.push_back({"A10G", {"NVIDIA A10G"}, 80, 23028, 600, 6144, false, 0, true, 86});
  m.push_back({"A40", {"NVIDIA A40"}, 84, 46068, 696, 6144, false, 0, true, 86});
  m.push_back({"RTX-A4000", {"NVIDIA RTX A4000"}, 48, 16376, 448, 4096, false, 0, true, 86});
  m.push_back({"RTX-A5000", {"NVIDIA RTX A5000"}, 64, 24564, 768, 6144, false, 0, true, 86});
  m.push_back({"RTX-A6000", {"NVIDIA RTX A6000"}, 84, 48685, 768, 6144, false, 0, true, 86});
  m.push_back({"RTX-6000-ADA", {"NVIDIA RTX 6000 Ada Generation"}, 142, 49140, 960, 98304, false, 0, true, 89});
  m.push_back({"RTX-2080-TI", {"NVIDIA GeForce RTX 2080 Ti"}, 68, 11264, 616, 5632, false, 0, true, 75});
  m.push_back({"RTX-3090", {"NVIDIA GeForce RTX 3090"}, 82, 24268, 936, 6144, false, 0, true, 86});
  m.push_back({"RTX-4090", {"NVIDIA GeForce RTX 4090"}, 128, 24564, 1008, 73728, false, 0, true, 89});
  m.push_back({"RTX-5090", {"NVIDIA GeForce RTX 5090"}, 170, 32607, 1792, 98304, false, 0, true, 120});
  m.push_back({"RTX-PRO-6000",
               {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"},
               188,
               97887,
               1792,
               131072,
               true,
               4,
               true,
               120});
  return m;
}

}  // namespace

std::string normalize_product_name(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      out.push_back('-');
    } else if (std::isalnum(u) || c == '-' || c == '_' || c == '.') {
      out.push_back(static_cast<char>(std::tolower(u)));
    }
  }
  return out;
}

GpuCatalog::GpuCatalog(std::vector<GpuModelSpec> models) {
  if (models.size() > kMaxGpuModels) throw std::logic_error("GPU catalog: more built-in models than ModelMask bits");
  builtin_count_ = models.size();
  for (size_t i = 0; i < models.size(); ++i) {
    const auto id = static_cast<GpuModelId>(i);
    auto add_key = [&](const std::string& name) {
      std::string key = normalize_product_name(name);
      for (const auto& [k, other] : product_keys_) {
        if (k == key && other != id) {
          throw std::logic_error("GPU catalog: \"" + name + "\" names two models");
        }
      }
      product_keys_.emplace_back(std::move(key), id);
    };
    add_key(models[i].name);
    for (const auto& a : models[i].aliases) add_key(a);
    models_[i] = std::move(models[i]);
  }
  size_.store(builtin_count_, std::memory_order_release);
}

const GpuCatalog& GpuCatalog::builtin() { return builtin_mutable(); }

GpuCatalog& GpuCatalog::builtin_mutable() {
  static GpuCatalog catalog(builtin_models());
  return catalog;
}

std::unique_ptr<GpuCatalog> GpuCatalog::make_builtin_copy() {
  return std::unique_ptr<GpuCatalog>(new GpuCatalog(builtin_models()));
}

const GpuModelSpec& GpuCatalog::spec(GpuModelId id) const {
  if (id >= size()) throw std::out_of_range("GPU model id " + std::to_string(id) + " is not in the catalog");
  return models_[id];
}

std::optional<GpuModelId> GpuCatalog::find(std::string_view name) const {
  for (size_t i = 0; i < builtin_count_; ++i) {
    if (iequals(models_[i].name, name)) return static_cast<GpuModelId>(i);
    for (const auto& alias : models_[i].aliases) {
      if (iequals(alias, name)) return static_cast<GpuModelId>(i);
    }
  }
  return std::nullopt;
}

std::optional<GpuModelId> GpuCatalog::find_product(std::string_view product) const {
  const std::string key = normalize_product_name(product);
  if (key.empty()) return std::nullopt;
  for (const auto& [k, id] : product_keys_) {
    if (k == key) return id;
  }
  return std::nullopt;
}

std::optional<GpuModelId> GpuCatalog::find_unknown_pool(std::string_view label) const {
  const std::string key = normalize_product_name(label);
  if (key.empty()) return std::nullopt;
  const size_t n = size();
  for (size_t i = builtin_count_; i < n; ++i) {
    if (pool_keys_[i] == key) return static_cast<GpuModelId>(i);
  }
  return std::nullopt;
}

std::string GpuCatalog::known_names() const {
  std::string out;
  for (size_t i = 0; i < builtin_count_; ++i) {
    if (!out.empty()) out += ", ";
    out += models_[i].name;
  }
  return out;
}

GpuCatalog::Registration GpuCatalog::register_unknown(std::string_view label, int64_t memory_mib) {
  const std::string quoted = "\"" + std::string(label.substr(0, kMaxLabelChars + 1)) + "\"";
  if (normalize_product_name(label).empty()) {
    throw std::invalid_argument("GPU product " + quoted + ": empty (no letters or digits)");
  }
  if (label.size() > kMaxLabelChars) {
    throw std::invalid_argument("GPU product " + quoted + ": longer than " + std::to_string(kMaxLabelChars) +
                                " characters");
  }
  if (memory_mib < 0) throw std::invalid_argument("GPU product " + quoted + ": negative memory");
  if (auto id = find_product(label)) {
    throw std::invalid_argument("GPU product " + quoted + " is the built-in model " + models_[*id].name +
                                ", not an unknown pool");
  }
  std::lock_guard lock(register_mu_);
  if (auto id = find_unknown_pool(label)) return {*id, false, models_[*id].memory_mib};
  const size_t n = size_.load(std::memory_order_relaxed);  // writers hold the mutex
  if (n >= kMaxGpuModels) {
    throw std::length_error("GPU product " + quoted + ": cannot add an unknown-product pool, the catalog holds " +
                            std::to_string(kMaxGpuModels) + " models (" + std::to_string(builtin_count_) +
                            " built-in, " + std::to_string(n - builtin_count_) +
                            " unknown pools); add the product to the built-in catalog");
  }
  GpuModelSpec& s = models_[n];
  s.name = std::string(label);
  s.memory_mib = memory_mib;
  s.inferred = true;
  s.unknown_pool = true;
  pool_keys_[n] = normalize_product_name(label);
  size_.store(n + 1, std::memory_order_release);
  return {static_cast<GpuModelId>(n), true, memory_mib};
}

std::vector<std::string> GpuCatalog::unknown_pool_names() const {
  std::vector<std::string> out;
  const size_t n = size();
  for (size_t i = builtin_count_; i < n; ++i) out.push_back(models_[i].name);
  return out;
}

}  // namespace gpupack
