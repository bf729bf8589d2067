#include "sim/hw_experiment.h"

#include <fmt/format.h>

#include <random>

#include "mig/mig_geometry.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {

std::string_view to_string(HwClusterMode m) {
  switch (m) {
    case HwClusterMode::kMig:
      return "mig";
    case HwClusterMode::kMps:
      return "mps";
    case HwClusterMode::kMixed:
      return "mixed";
  }
  return "unknown";
}

std::vector<NodeSpec> hw_experiment_nodes(HwClusterMode mode, int node_count) {
  const GpuModelId a100 = *GpuCatalog::builtin().find("A100-80GB");
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < node_count; ++i) {
    NodeSpec n{fmt::format("a100-{:03d}", i), 128000, 1024 * 1024, 8, a100};
    n.numa = {{64000, 512 * 1024}, {64000, 512 * 1024}};
    for (int g = 0; g < 8; ++g) {
      GpuSetup s;
      s.numa = static_cast<int8_t>(g / 4);
      s.nvlink_domain = static_cast<int8_t>(g / 4);
      s.pcie_switch = static_cast<int8_t>(g / 2);
      GpuMode m = GpuMode::kMig;
      if (mode == HwClusterMode::kMps) m = g < 4 ? GpuMode::kMps : GpuMode::kExclusive;
      if (mode == HwClusterMode::kMixed) m = g < 4 ? GpuMode::kMig : g < 6 ? GpuMode::kMps : GpuMode::kExclusive;
      s.mode = m;
      if (m == GpuMode::kMps) s.mps_replicas = 4;
      n.gpus.push_back(s);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Workload hw_experiment_workload(const HwExperimentOptions& options) {
  struct Shape {
    const char* name;
    double weight;
    WorkloadClass cls;
    int32_t milli;
    int64_t gpu_memory_mib;
    int32_t min_sm;
    int64_t cpu_milli;
  };
  // Sizes chosen so that "by need" resolves to the profile in the name on
  // A100-80GB, and inference fits an MPS client of 4 replicas (<= 250 milli,
  // <= 20312 MiB).
  static const Shape shapes[] = {
      {"inf-1g10", 0.40, WorkloadClass::kBatchInference, 140, 9000, 14, 2000},
      {"inf-1g20", 0.15, WorkloadClass::kBatchInference, 140, 18000, 14, 2000},
      {"inf-2g20", 0.15, WorkloadClass::kBatchInference, 250, 18000, 28, 3000},
      {"train-3g40", 0.10, WorkloadClass::kTraining, 1000, 38000, 42, 8000},
      {"train-4g40", 0.10, WorkloadClass::kTraining, 1000, 38000, 56, 8000},
      {"train-7g80", 0.10, WorkloadClass::kTraining, 1000, 70000, 98, 12000},
  };
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Workload w;
  for (int i = 0; i < options.pod_count; ++i) {
    double x = u(rng);
    const Shape* s = &shapes[0];
    for (const Shape& c : shapes) {
      s = &c;
      if (x < c.weight) break;
      x -= c.weight;
    }
    Request r{s->cpu_milli, 8192, 1, s->milli, 0};
    r.workload_class = s->cls;
    r.gpu_memory_mib = s->gpu_memory_mib;
    r.mig_min_sm = s->min_sm;
    w.names.push_back(fmt::format("{}-{:05d}", s->name, i));
    w.requests.push_back(r);
    w.model_keys.emplace_back();
  }
  return w;
}

HwRunResult run_hw_experiment(HwClusterMode mode, MigSlotRule rule, const HwExperimentOptions& options) {
  ClusterState state(hw_experiment_nodes(mode, options.node_count));
  const Workload w = hw_experiment_workload(options);
  auto policy = make_policy(options.node_policy, {options.seed, std::make_shared<TargetWorkload>()});
  Scheduler sched(*policy);
  PlacementOptions placement;
  placement.mig_rule = rule;
  auto mixes = std::make_shared<std::vector<MigTargetMix>>(GpuCatalog::builtin().size());
  const GpuModelId a100 = *GpuCatalog::builtin().find("A100-80GB");
  (*mixes)[a100] = workload_mig_mix(*mig_geometry(a100), w.requests);
  placement.mig_mix = mixes;
  sched.set_placement_options(placement);
  sched.set_explain_failures(false);
  HwRunResult r;
  r.mode = mode;
  r.rule = rule;
  r.pods = static_cast<int>(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const Decision d = sched.schedule(state, PodId{static_cast<int32_t>(i)}, w.requests[i]);
    (d.placed() ? r.placed : r.failed) += 1;
  }
  int64_t used_milli = 0;
  for (int n = 0; n < state.node_count(); ++n) {
    const NodeId id{n};
    for (int g = 0; g < state.gpu_count(id); ++g) {
      const int32_t free = state.gpu_free_milli(id)[static_cast<size_t>(g)];
      const bool busy = free < kGpuMilliPerGpu || state.mps_clients(id, g) > 0;
      r.gpus_used += busy;
      used_milli += kGpuMilliPerGpu - free;
    }
  }
  r.gpus_total = state.total_gpus();
  r.alloc_used_gpus_pct = r.gpus_used ? 100.0 * static_cast<double>(used_milli) / (r.gpus_used * 1000.0) : 0;
  r.alloc_cluster_pct = 100.0 * static_cast<double>(used_milli) / static_cast<double>(state.gpu_capacity_milli());
  return r;
}

std::string format_hw_results(const std::vector<HwRunResult>& runs) {
  std::string out =
      "| cluster mode | slot choice | pods | placed | failed | GPUs needed | alloc on used GPUs | alloc of cluster |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const HwRunResult& r : runs) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} / {} | {:.1f}% | {:.1f}% |\n", to_string(r.mode),
                       r.rule == MigSlotRule::kMigAware ? "mig-aware" : "first-free", r.pods, r.placed, r.failed,
                       r.gpus_used, r.gpus_total, r.alloc_used_gpus_pct, r.alloc_cluster_pct);
  }
  return out;
}

}  // namespace gpupack
