#include "sim/synthetic.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "model/gpu_catalog.h"
#include "sim/random.h"

namespace gpupack {
namespace {

struct NodeType {
  double share;
  int64_t cpu_milli;
  int64_t memory_mib;
  int32_t gpus;
  const char* model;
};

// Shares of the openb GPU nodes by shape (1,213 nodes), rounded.
constexpr NodeType kNodeTypes[] = {
    {0.45, 96000, 393216, 8, "G2"},      {0.32, 104000, 524288, 2, "T4"},     {0.10, 16000, 122880, 2, "P100"},
    {0.04, 128000, 786432, 8, "G3"},     {0.03, 32000, 131072, 4, "V100M16"}, {0.02, 64000, 262144, 2, "P100"},
    {0.02, 96000, 786432, 8, "V100M32"}, {0.02, 8000, 32768, 1, "V100M16"},
};

template <typename T>
struct Weighted {
  double weight;
  T value;
};

template <typename T, size_t N>
T draw(Rng& rng, const Weighted<T> (&table)[N]) {
  double total = 0;
  for (const auto& w : table) total += w.weight;
  double x = rng.unit() * total;
  for (const auto& w : table) {
    if (x < w.weight) return w.value;
    x -= w.weight;
  }
  return table[N - 1].value;
}

// Pod classes: the 30 most common (cpu, GPUs, GPU share) classes of openb
// default (94% of its pods) with their counts as weights and their mean host
// memory, plus the multi-GPU classes (about 1% of pods).
struct SyntheticClass {
  int64_t cpu_milli;
  int32_t gpu_count;
  int32_t gpu_milli;
  int64_t memory_mib;
};
constexpr Weighted<SyntheticClass> kPodClasses[] = {
    {1047, {3152, 1, 810, 5600}},   {874, {11300, 1, 1000, 48916}}, {599, {11400, 1, 1000, 51350}},
    {470, {3152, 1, 1000, 5600}},   {388, {11908, 1, 470, 47104}},  {366, {12500, 0, 0, 57388}},
    {360, {8000, 1, 470, 30517}},   {326, {12000, 1, 1000, 21803}}, {290, {32000, 0, 0, 49233}},
    {255, {18708, 1, 1000, 64512}}, {237, {11908, 1, 650, 47104}},  {232, {4000, 1, 320, 21736}},
    {195, {9810, 1, 1000, 41560}},  {185, {8000, 0, 0, 29595}},     {164, {8000, 1, 1000, 22473}},
    {159, {4000, 1, 1000, 25868}},  {158, {15700, 1, 1000, 58368}}, {153, {11908, 1, 1000, 47104}},
    {150, {16000, 1, 1000, 40001}}, {122, {4000, 1, 230, 27390}},   {120, {6000, 1, 460, 11093}},
    {120, {15400, 0, 0, 51200}},    {95, {16500, 0, 0, 51200}},     {93, {14200, 1, 1000, 58368}},
    {84, {24200, 1, 1000, 93184}},  {75, {3152, 1, 590, 5600}},     {72, {8000, 1, 320, 30517}},
    {72, {4152, 1, 550, 10600}},    {55, {11900, 1, 1000, 75291}},  {54, {4000, 1, 160, 15399}},
    {16, {16000, 2, 1000, 65536}},  {15, {32000, 4, 1000, 131072}}, {44, {88000, 8, 1000, 327680}},
};
// Share of GPU pods pinned to one GPU model (the model drawn by GPU count).
constexpr double kPinnedShare = 0.05;

}  // namespace

std::vector<NodeSpec> synthetic_nodes(const SyntheticOptions& options) {
  if (options.node_count <= 0) throw std::invalid_argument("synthetic cluster needs at least one node");
  std::vector<NodeSpec> nodes;
  nodes.reserve(options.node_count);
  int made = 0;
  for (size_t t = 0; t < std::size(kNodeTypes); ++t) {
    const NodeType& type = kNodeTypes[t];
    const int count = t + 1 == std::size(kNodeTypes) ? options.node_count - made
                                                     : static_cast<int>(std::lround(type.share * options.node_count));
    for (int i = 0; i < count && made < options.node_count; ++i, ++made) {
      nodes.push_back({fmt::format("synth-node-{:05d}", made), type.cpu_milli, type.memory_mib, type.gpus,
                       *GpuCatalog::builtin().find(type.model)});
    }
  }
  return nodes;
}

Workload synthetic_workload(const SyntheticOptions& options, int64_t capacity_milli) {
  Rng rng(options.seed);
  const int64_t target = static_cast<int64_t>(options.gpu_request_ratio * static_cast<double>(capacity_milli));
  Workload w;
  int64_t total = 0;
  const auto nodes = synthetic_nodes(options);
  while (total < target) {
    const SyntheticClass c = draw(rng, kPodClasses);
    Request r;
    r.cpu_milli = c.cpu_milli;
    r.gpu_count = c.gpu_count;
    r.gpu_milli = c.gpu_milli;
    r.memory_mib = c.memory_mib;
    std::string key;
    if (r.is_gpu() && rng.unit() < kPinnedShare) {
      // Pin to the model of a random GPU, so models are drawn by GPU count.
      const NodeSpec* n = nullptr;
      do n = &nodes[rng.below(nodes.size())];
      while (n->gpu_count < r.gpu_count);
      r.allowed_models = model_bit(n->gpu_model);
      key = GpuCatalog::builtin().spec(n->gpu_model).name;
    }
    w.names.push_back(fmt::format("synth-pod-{:06d}", w.requests.size()));
    w.requests.push_back(r);
    w.model_keys.push_back(key);
    total += r.total_gpu_milli();
  }
  return w;
}

}  // namespace gpupack
