#include "policy/registry.h"

#include <fmt/format.h>

#include <stdexcept>

#include "policy/best_fit.h"
#include "policy/dot_product.h"
#include "policy/fgd.h"
#include "policy/first_fit.h"
#include "policy/gpu_clustering.h"
#include "policy/gpu_packing.h"
#include "policy/random.h"
#include "policy/spread.h"

namespace gpupack {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"random", "dotprod", "gpuclustering", "gpupacking",
                                                 "bestfit", "fgd", "firstfit", "spread"};
  return names;
}

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options) {
  if (name == "random") return std::make_unique<RandomPolicy>(options.seed);
  if (name == "dotprod") return std::make_unique<DotProductPolicy>();
  if (name == "gpuclustering") return std::make_unique<GpuClusteringPolicy>();
  if (name == "gpupacking") return std::make_unique<GpuPackingPolicy>();
  if (name == "bestfit") return std::make_unique<BestFitPolicy>();
  if (name == "fgd") return std::make_unique<FgdPolicy>(options.target);
  if (name == "firstfit") return std::make_unique<FirstFitPolicy>();
  if (name == "spread") return std::make_unique<SpreadPolicy>();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument(fmt::format("unknown policy '{}' (known: {})", name, known));
}

}  // namespace gpupack
