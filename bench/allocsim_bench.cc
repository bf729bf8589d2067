// Replay speed of the caching-allocator model: one million events of a
// generated workload through replay() with the default configuration (target:
// at most 1 s per million events).
#include <benchmark/benchmark.h>

#include "alloc/alloc_config.h"
#include "alloc/allocsim.h"
#include "alloc/workload_gen.h"

namespace {

gpupack::Trace million_events(const char* kind, std::uint64_t steps) {
  gpupack::Trace t = gpupack::generate_workload(kind, 1, steps);
  if (t.events.size() > 1'000'000) t.events.resize(1'000'000);  // frees follow allocs, so a prefix stays valid
  return t;
}

void replay_million(benchmark::State& state, const char* kind, std::uint64_t steps, const char* conf) {
  const gpupack::Trace trace = million_events(kind, steps);
  const gpupack::AllocConfig config = gpupack::parse_alloc_conf(conf);
  gpupack::ReplayOptions options;
  for (auto _ : state) {
    gpupack::ReplayResult r = gpupack::replay(trace, config, options);
    benchmark::DoNotOptimize(r.summary.peak_reserved_bytes);
  }
  state.counters["events"] = static_cast<double>(trace.events.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.events.size()));
}

// ~244 events per training step, ~160 per inference decode step.
BENCHMARK_CAPTURE(replay_million, training_default, "training", 4200, "")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay_million, inference_default, "inference", 7000, "")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay_million, inference_expandable, "inference", 7000, "expandable_segments:True")
    ->Unit(benchmark::kMillisecond);

void generate_inference(benchmark::State& state) {
  for (auto _ : state) {
    gpupack::Trace t = gpupack::generate_inference(1, 7000);
    benchmark::DoNotOptimize(t.events.data());
  }
}
BENCHMARK(generate_inference)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
