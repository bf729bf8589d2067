// Engine benchmarks: whole static-arrival experiments (the FGD paper's
// method) on the openb default trace and on a 10x synthetic cluster, and the
// cost of one scheduling decision. openb cases read shared/traces/openb and
// report an error (skipped) when it is absent.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>

#include "frag/capacity_frag.h"
#include "frag/cluster_metrics.h"
#include "frag/packing_prices.h"
#include "io/openb.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "sim/random.h"
#include "sim/static_experiment.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

struct Loaded {
  std::vector<NodeSpec> nodes;
  Workload trace;
  std::vector<Request> arrivals;
  std::shared_ptr<const TargetWorkload> target;
};

Loaded prepare(std::vector<NodeSpec> nodes, Workload trace, uint64_t seed) {
  Loaded l{std::move(nodes), std::move(trace), {}, nullptr};
  l.trace.sort_by_name();
  for (int32_t i : sample_static_arrivals(l.trace.requests, ClusterState(l.nodes).gpu_capacity_milli(), 1.3, seed))
    l.arrivals.push_back(l.trace.requests[i]);
  l.target =
      std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(l.trace.requests, l.trace.model_keys));
  return l;
}

const Loaded* openb_default() {
  static const std::unique_ptr<Loaded> loaded = []() -> std::unique_ptr<Loaded> {
    const std::string dir = std::string(GPUPACK_SHARED_DIR) + "/traces/openb/";
    if (!std::filesystem::exists(dir + "openb_pod_list_default.csv")) return nullptr;
    return std::make_unique<Loaded>(prepare(read_openb_nodes(dir + "openb_node_list_gpu_node.csv"),
                                            to_workload(read_openb_pods(dir + "openb_pod_list_default.csv")), 42));
  }();
  return loaded.get();
}

void run_one(benchmark::State& state, const Loaded& l, const std::string& policy_name) {
  size_t arrivals = 0;
  for (auto _ : state) {
    auto policy = make_policy(policy_name, {42, l.target});
    const StaticRunResult r = run_static(l.nodes, l.arrivals, *policy, seeded_rank(l.nodes.size(), 42), *l.target);
    benchmark::DoNotOptimize(r.steps.back().used_milli);
    arrivals += r.steps.size();
  }
  state.counters["node_evals/s"] = benchmark::Counter(
      static_cast<double>(arrivals) * static_cast<double>(l.nodes.size()), benchmark::Counter::kIsRate);
}

// One experiment: openb default, tune 1.3, seed 42 (10,866 arrivals x 1,213 nodes).
void BM_OpenbDefaultExperiment(benchmark::State& state, const std::string& policy) {
  const Loaded* l = openb_default();
  if (!l) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  run_one(state, *l, policy);
}
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, fgd, std::string("fgd"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, capfrag, std::string("capfrag"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, poolfrag, std::string("poolfrag"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, dualfrag, std::string("dualfrag"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, bestfit, std::string("bestfit"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, dotprod, std::string("dotprod"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, gpupacking, std::string("gpupacking"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, gpuclustering, std::string("gpuclustering"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenbDefaultExperiment, random, std::string("random"))->Unit(benchmark::kMillisecond);

// An openb-like synthetic cluster of `node_count` nodes and its arrivals.
Loaded synthetic_loaded(int node_count) {
  SyntheticOptions opt;
  opt.node_count = node_count;
  auto nodes = synthetic_nodes(opt);
  auto trace = synthetic_workload(opt, ClusterState(nodes).gpu_capacity_milli());
  return prepare(std::move(nodes), std::move(trace), 42);
}

// Schedules arrivals in order until half the GPU capacity is used; returns
// the index of the first arrival not scheduled.
// Places the first `arrivals` arrivals (fewer once `max_used_milli` of GPU
// milli is in use) with `policy_name`, seed 42; returns how many it tried.
size_t fill(ClusterState& cluster, const Loaded& l, const std::string& policy_name, size_t arrivals,
            int64_t max_used_milli = std::numeric_limits<int64_t>::max()) {
  auto policy = make_policy(policy_name, {42, l.target});
  Scheduler sched(*policy);
  size_t i = 0;
  for (; i < std::min(arrivals, l.arrivals.size()) && cluster.gpu_used_milli() < max_used_milli; ++i)
    sched.schedule(cluster, PodId{static_cast<int32_t>(i)}, l.arrivals[i]);
  return i;
}

size_t fill_to_half(ClusterState& cluster, const Loaded& l, const std::string& policy_name) {
  return fill(cluster, l, policy_name, l.arrivals.size(), cluster.gpu_capacity_milli() / 2);
}

// 10x synthetic cluster: 12,000 nodes, ~106,000 arrivals at tune 1.3.
void BM_Synthetic10xFgd(benchmark::State& state) {
  static const Loaded l = synthetic_loaded(12000);
  state.counters["arrivals"] = static_cast<double>(l.arrivals.size());
  run_one(state, l, "fgd");
}
BENCHMARK(BM_Synthetic10xFgd)->Unit(benchmark::kSecond)->Iterations(1);

// One decision on a half-full openb cluster (no bind), per policy.
void BM_DecideHalfFullOpenb(benchmark::State& state, const std::string& policy_name) {
  const Loaded* l = openb_default();
  if (!l) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  ClusterState cluster(l->nodes);
  const size_t i = fill_to_half(cluster, *l, policy_name);
  size_t k = i;
  for (auto _ : state) {
    // Fresh memo per decision so the measured cost is the uncached one.
    auto fresh = make_policy(policy_name, {42, l->target});
    Scheduler s(*fresh);
    benchmark::DoNotOptimize(s.decide(cluster, l->arrivals[k]));
    if (++k == l->arrivals.size()) k = i;
  }
}
BENCHMARK_CAPTURE(BM_DecideHalfFullOpenb, fgd, std::string("fgd"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecideHalfFullOpenb, capfrag, std::string("capfrag"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecideHalfFullOpenb, poolfrag, std::string("poolfrag"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecideHalfFullOpenb, dualfrag, std::string("dualfrag"))->Unit(benchmark::kMicrosecond);

// dualfrag's packing prices for the openb default target (the LP a dualfrag
// policy solves once when it is made, and again at each +learned rebuild).
void BM_PackingPricesOpenb(benchmark::State& state) {
  const Loaded* l = openb_default();
  if (!l) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  for (auto _ : state) {
    const PackingPrices p(*l->target);
    benchmark::DoNotOptimize(p.fluid_gpus());
  }
}
BENCHMARK(BM_PackingPricesOpenb)->Unit(benchmark::kMicrosecond);

// The packing prices of a workload with Arg(0) distinct per-GPU sizes spread
// over 1..999 milli: up to 100 the LP solves them exactly; above, on the
// sizes rounded down to multiples of 10 (frag/packing_prices.h).
void BM_PackingPricesManySizes(benchmark::State& state) {
  const int sizes = static_cast<int>(state.range(0));
  std::vector<std::pair<int32_t, double>> items;
  for (int i = 0; i < sizes; ++i) items.emplace_back(1 + i * 998 / (sizes - 1), 1.0 + i % 7);
  for (auto _ : state) {
    const PackingPrices p(items);
    benchmark::DoNotOptimize(p.fluid_gpus());
  }
}
BENCHMARK(BM_PackingPricesManySizes)->Arg(20)->Arg(100)->Arg(999)->Unit(benchmark::kMillisecond);

// capfrag's S and FGD's one-pod measure together (frag/capacity_frag.h
// StrandedPairEvaluator), over the openb default target, for every node of
// an openb cluster after the first half of the arrivals (FGD, seed 42; about
// 65% of its GPU capacity arrived): the node evaluation that
// capfrag, poolfrag and dualfrag add to FGD's. Time per 1,213 nodes.
void BM_StrandedPairOpenbHalfFull(benchmark::State& state) {
  const Loaded* l = openb_default();
  if (!l) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  ClusterState cluster(l->nodes);
  fill(cluster, *l, "fgd", l->arrivals.size() / 2);
  const StrandedPairEvaluator eval(*l->target, class_weights(*l->target, ClassWeight::kPods));
  for (auto _ : state) {
    int64_t sum = 0;
    for (int n = 0; n < cluster.node_count(); ++n) {
      const NodeId id{n};
      sum += eval(cluster.gpu_model(id), cluster.cpu_free_milli(id), cluster.gpu_free_milli(id)).capacity;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * cluster.node_count(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StrandedPairOpenbHalfFull)->Unit(benchmark::kMicrosecond);

// The repack bound of a full openb cluster (FGD, seed 42, every arrival
// tried): the LP `serve` solves for /metrics when the running pods' sizes
// change (frag/cluster_metrics.h repack_bound), and cluster_metrics' pass
// over the state that collects its items (Arg 1; no target, no probes).
void BM_RepackBoundOpenbFull(benchmark::State& state) {
  const Loaded* l = openb_default();
  if (!l) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  ClusterState cluster(l->nodes);
  fill(cluster, *l, "fgd", l->arrivals.size());
  const ClusterMetrics m = cluster_metrics(cluster, TargetWorkload{}, {}, false);
  state.counters["sizes"] = m.bound_gpu_items ? static_cast<double>(m.bound_gpu_items->size()) : 0.0;
  if (const auto r = repack_bound(m)) {
    state.counters["freeable_gpus"] = r->freeable_gpus;
    state.counters["size_waste_gpus"] = r->size_waste_gpus;
    state.counters["whole_free_gpus"] = static_cast<double>(m.gpu_total - m.gpus_in_use);
  }
  for (auto _ : state) {
    if (state.range(0) == 1)
      benchmark::DoNotOptimize(cluster_metrics(cluster, TargetWorkload{}, {}, false).gpus_in_use);
    else
      benchmark::DoNotOptimize(repack_bound(m));
  }
}
BENCHMARK(BM_RepackBoundOpenbFull)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecideHalfFullOpenb, bestfit, std::string("bestfit"))->Unit(benchmark::kMicrosecond);

// The extender's cold call: a fresh FGD policy (as after a model reload)
// evaluates a candidate list of every node of a 5,000-node synthetic cluster
// filled to half, with every score reported (prioritize). Arg 0: the plain
// walk; 1: results shared within each class of identical nodes.
void BM_ColdCandidateWalk5000(benchmark::State& state) {
  static const Loaded l = synthetic_loaded(5000);
  ClusterState cluster(l.nodes);
  const size_t i = fill_to_half(cluster, l, "fgd");
  std::vector<NodeId> all;
  for (int n = 0; n < cluster.node_count(); ++n) all.push_back(NodeId{n});
  std::vector<ScoredNode> scored;
  size_t k = i;
  for (auto _ : state) {
    auto fresh = make_policy("fgd", {42, l.target});
    Scheduler s(*fresh);
    s.set_use_node_classes(state.range(0) != 0);
    scored.clear();
    benchmark::DoNotOptimize(s.evaluate(cluster, l.arrivals[k], all, &scored));
    if (++k == l.arrivals.size()) k = i;
  }
  state.counters["classes"] = static_cast<double>(cluster.node_classes().live().size());
}
BENCHMARK(BM_ColdCandidateWalk5000)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpupack

BENCHMARK_MAIN();
