// Dynamic-simulator benchmarks: one event-driven run on the openb default
// trace with its creation/deletion times (FGD and BestFit), and a generated
// gang workload with and without EASY backfill. openb cases report an error
// (skipped) when shared/traces/openb is absent.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "io/openb.h"
#include "policy/registry.h"
#include "sim/dynamic_sim.h"
#include "sim/random.h"

namespace gpupack {
namespace {

struct Case {
  std::vector<NodeSpec> nodes;
  DynamicWorkload workload;
  std::vector<std::string> racks;
  std::shared_ptr<const TargetWorkload> target;
};

std::shared_ptr<const TargetWorkload> target_of(const DynamicWorkload& w) {
  std::vector<Request> r;
  std::vector<std::string> k;
  for (const auto& j : w.jobs)
    for (const auto& m : j.members) {
      r.push_back(m);
      k.push_back(j.model_key);
    }
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(r, k));
}

const Case* openb() {
  static const std::unique_ptr<Case> c = []() -> std::unique_ptr<Case> {
    const std::string dir = std::string(GPUPACK_SHARED_DIR) + "/traces/openb/";
    if (!std::filesystem::exists(dir + "openb_pod_list_default.csv")) return nullptr;
    auto c = std::make_unique<Case>();
    c->nodes = read_openb_nodes(dir + "openb_node_list_gpu_node.csv");
    c->workload = jobs_from_openb(read_openb_pods(dir + "openb_pod_list_default.csv"));
    c->target = target_of(c->workload);
    return c;
  }();
  return c.get();
}

const Case& gangs() {
  static const Case c = [] {
    Case c;
    const GangCluster g = gang_cluster(64, 8, 8);
    c.nodes = g.nodes;
    c.racks = g.rack_of_node;
    c.workload = generate_gang_workload({});
    c.target = target_of(c.workload);
    return c;
  }();
  return c;
}

void run(benchmark::State& state, const Case& c, const std::string& policy_name, QueueMode mode) {
  DynamicOptions o;
  o.mode = mode;
  if (!c.racks.empty()) o.levels = {{"rack", c.racks}};
  double alloc = 0;
  for (auto _ : state) {
    auto policy = make_policy(policy_name, {42, c.target});
    const DynamicRunResult r = run_dynamic(c.nodes, c.workload, *policy, seeded_rank(c.nodes.size(), 42), *c.target, o);
    alloc = r.mean_alloc_pct;
    benchmark::DoNotOptimize(r.samples.size());
  }
  state.counters["mean_alloc_pct"] = alloc;
}

void BM_DynamicOpenbDefault(benchmark::State& state, const std::string& policy) {
  const Case* c = openb();
  if (!c) {
    state.SkipWithError("shared/traces/openb not found");
    return;
  }
  run(state, *c, policy, QueueMode::kNoBlocking);
}
BENCHMARK_CAPTURE(BM_DynamicOpenbDefault, fgd, std::string("fgd"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DynamicOpenbDefault, bestfit, std::string("bestfit"))->Unit(benchmark::kMillisecond);

void BM_DynamicGangs(benchmark::State& state, QueueMode mode) { run(state, gangs(), "fgd", mode); }
BENCHMARK_CAPTURE(BM_DynamicGangs, no_blocking, QueueMode::kNoBlocking)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DynamicGangs, backfill, QueueMode::kBackfill)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpupack

BENCHMARK_MAIN();
