#include "sim/dynamic_workload.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "model/gpu_catalog.h"
#include "sim/random.h"

namespace gpupack {
namespace {

void sort_by_submit(std::vector<DynamicJob>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const DynamicJob& a, const DynamicJob& b) { return a.submit_s < b.submit_s; });
}

template <typename T>
size_t pick_weighted(Rng& rng, const std::vector<T>& table, double (*weight)(const T&)) {
  double total = 0;
  for (const T& t : table) total += weight(t);
  double x = rng.unit() * total;
  for (size_t i = 0; i < table.size(); ++i) {
    x -= weight(table[i]);
    if (x < 0) return i;
  }
  return table.size() - 1;
}

}  // namespace

DynamicWorkload jobs_from_openb(const std::vector<TracePod>& pods) {
  DynamicWorkload w;
  w.jobs.reserve(pods.size());
  std::unordered_map<std::string, size_t> gang_job;  // gang -> job index
  for (const TracePod& p : pods) {
    if (!p.gang.empty()) {
      auto [it, fresh] = gang_job.emplace(p.gang, w.jobs.size());
      if (!fresh) {
        DynamicJob& g = w.jobs[it->second];
        g.members.push_back(p.request);
        g.member_names.push_back(p.name);
        if (g.min_member == 0) g.min_member = p.gang_min_member;
        continue;
      }
    }
    DynamicJob j;
    j.name = p.gang.empty() ? p.name : p.gang;
    j.members = {p.request};
    j.member_names = {p.name};
    j.min_member = p.gang_min_member;
    j.model_key = p.gpu_spec;
    j.submit_s = std::max<int64_t>(0, p.creation_time_s);
    if (p.deletion_time_s < 0) {
      j.runtime_s = kRunsForever;
    } else if (p.deletion_time_s < j.submit_s) {
      j.runtime_s = 0;
      ++w.bad_times;
    } else {
      j.runtime_s = p.deletion_time_s - j.submit_s;
    }
    if (j.runtime_s != kRunsForever) j.estimate_s = j.runtime_s;
    w.jobs.push_back(std::move(j));
  }
  sort_by_submit(w.jobs);
  return w;
}

DynamicWorkload generate_gang_workload(const GangWorkloadOptions& o) {
  if (o.shapes.empty() || o.priorities.empty())
    throw std::invalid_argument("gang workload: empty shape or priority table");
  for (const GangShape& s : o.shapes)
    if (s.members < 1 || s.gpus_per_member < 1 || s.gpu_milli < 1 || s.gpu_milli > kGpuMilliPerGpu ||
        (s.gpu_milli < kGpuMilliPerGpu && s.gpus_per_member != 1) || !(s.weight >= 0))
      throw std::invalid_argument(
          "gang workload: a shape needs members >= 1, GPUs >= 1, milli in [1, 1000] "
          "(below 1000 only with one GPU) and a weight >= 0");
  if (!(o.mean_interarrival_s > 0)) throw std::invalid_argument("gang workload: mean interarrival must be > 0");
  if (!(o.max_overestimate >= 1)) throw std::invalid_argument("gang workload: max overestimate must be >= 1");
  Rng rng(o.seed);
  DynamicWorkload w;
  double t = 0;
  for (int i = 0; i < o.jobs; ++i) {
    t += -std::log(1.0 - rng.unit()) * o.mean_interarrival_s;
    const GangShape& shape =
        o.shapes[pick_weighted<GangShape>(rng, o.shapes, [](const GangShape& s) { return s.weight; })];
    const auto& prio = o.priorities[pick_weighted<std::pair<int, double>>(
        rng, o.priorities, [](const std::pair<int, double>& p) { return p.second; })];
    // Log-normal runtime by Box-Muller.
    const double u1 = 1.0 - rng.unit(), u2 = rng.unit();
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    const double runtime = o.median_runtime_s * std::exp(o.runtime_sigma * z);
    DynamicJob j;
    j.name = fmt::format("job-{:05d}", i);
    j.priority = prio.first;
    const int64_t share_milli = int64_t{shape.gpus_per_member} * shape.gpu_milli;
    const Request member{o.cpu_milli_per_gpu * share_milli / kGpuMilliPerGpu,
                         o.memory_mib_per_gpu * share_milli / kGpuMilliPerGpu, shape.gpus_per_member, shape.gpu_milli,
                         0};
    j.members.assign(static_cast<size_t>(shape.members), member);
    j.submit_s = static_cast<int64_t>(t);
    j.runtime_s = std::clamp(static_cast<int64_t>(std::llround(runtime)), o.min_runtime_s, o.max_runtime_s);
    const bool has_estimate = rng.unit() >= o.no_estimate_fraction;
    const double factor = 1.0 + rng.unit() * (o.max_overestimate - 1.0);
    if (has_estimate) j.estimate_s = static_cast<int64_t>(std::ceil(static_cast<double>(j.runtime_s) * factor));
    w.jobs.push_back(std::move(j));
  }
  sort_by_submit(w.jobs);
  return w;
}

GangCluster gang_cluster(int nodes, int gpus_per_node, int nodes_per_rack) {
  if (nodes <= 0 || gpus_per_node <= 0 || gpus_per_node > kMaxGpusPerNode || nodes_per_rack <= 0)
    throw std::invalid_argument("gang cluster: nodes, GPUs per node and nodes per rack must be positive");
  GangCluster c;
  const GpuModelId model = *GpuCatalog::builtin().find("V100M32");
  for (int i = 0; i < nodes; ++i) {
    c.nodes.push_back({fmt::format("gang-node-{:04d}", i), int64_t{8000} * gpus_per_node + 32000,
                       int64_t{65536} * gpus_per_node + 65536, gpus_per_node, model});
    c.rack_of_node.push_back(fmt::format("rack-{}", i / nodes_per_rack));
  }
  return c;
}

}  // namespace gpupack
