// Defrag benchmarks: planning for the openb default cluster after the FGD
// static experiment's arrivals (tune 1.3, seed 42), with a budget of 5% of
// running pods moved (goal: admit the failed pods), for the greedy planner
// and the HighNodeUtilization baseline. Reports the allocation gain (pp) and
// moves as counters. openb cases read shared/traces/openb and report an error
// (skipped) when it is absent.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "defrag/descheduler.h"
#include "defrag/planner.h"
#include "io/openb.h"
#include "policy/registry.h"
#include "sim/random.h"
#include "sim/static_experiment.h"

namespace gpupack {
namespace {

struct Loaded {
  std::unique_ptr<ClusterState> state;  // after the arrivals
  DefragGoal goal;
  DefragBudget budget;
  std::shared_ptr<const TargetWorkload> target;
  std::vector<int64_t> rank;
};

const Loaded* openb_after_arrivals() {
  static const std::unique_ptr<Loaded> loaded = []() -> std::unique_ptr<Loaded> {
    const std::string dir = std::string(GPUPACK_SHARED_DIR) + "/traces/openb/";
    if (!std::filesystem::exists(dir + "openb_pod_list_default.csv")) return nullptr;
    auto l = std::make_unique<Loaded>();
    const auto nodes = read_openb_nodes(dir + "openb_node_list_gpu_node.csv");
    Workload trace = to_workload(read_openb_pods(dir + "openb_pod_list_default.csv"));
    trace.sort_by_name();
    std::vector<Request> arrivals;
    for (int32_t i : sample_static_arrivals(trace.requests, ClusterState(nodes).gpu_capacity_milli(), 1.3, 42))
      arrivals.push_back(trace.requests[i]);
    l->target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(trace.requests, trace.model_keys));
    l->rank = seeded_rank(nodes.size(), 42);
    auto policy = make_policy("fgd", {42, l->target});
    run_static(nodes, arrivals, *policy, l->rank, *l->target, {}, [&](ClusterState& s, StaticRunResult& r) {
      l->state = std::make_unique<ClusterState>(s);
      for (size_t i = 0; i < r.placements.size(); ++i)
        if (!valid(r.placements[i].node)) l->goal.pending.push_back({PodId{static_cast<int32_t>(i)}, arrivals[i]});
    });
    l->budget.max_moves = l->state->bound_pod_count() * 5 / 100;
    return l;
  }();
  return loaded.get();
}

void report(benchmark::State& state, const ClusterState& s, const DefragPlan& plan) {
  const double cap = static_cast<double>(s.gpu_capacity_milli());
  state.counters["gain_pp"] = 100.0 * static_cast<double>(plan.after.used_gpu_milli - plan.before.used_gpu_milli) / cap;
  state.counters["moves"] = plan.moves();
  state.counters["admitted"] = plan.after.admitted_pods;
}

void BM_OpenbPlanner(benchmark::State& state) {
  const Loaded* l = openb_after_arrivals();
  if (!l) return state.SkipWithError("openb trace not found");
  DefragPlan plan;
  for (auto _ : state) plan = plan_defrag(*l->state, l->goal, l->budget, {});
  report(state, *l->state, plan);
}
BENCHMARK(BM_OpenbPlanner)->Unit(benchmark::kMillisecond);

void BM_OpenbHighNodeUtilization(benchmark::State& state) {
  const Loaded* l = openb_after_arrivals();
  if (!l) return state.SkipWithError("openb trace not found");
  DefragPlan plan;
  for (auto _ : state) {
    auto policy = make_policy("fgd", {42, l->target});
    plan = plan_descheduler(*l->state, l->goal, l->budget, {}, *policy, l->rank, {});
  }
  report(state, *l->state, plan);
}
BENCHMARK(BM_OpenbHighNodeUtilization)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpupack

BENCHMARK_MAIN();
