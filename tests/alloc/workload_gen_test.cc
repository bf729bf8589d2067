#include "alloc/workload_gen.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "alloc/allocsim.h"

namespace gpupack {
namespace {

bool same_events(const Trace& a, const Trace& b) {
  if (a.events.size() != b.events.size()) return false;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const auto &x = a.events[i], &y = b.events[i];
    if (x.time_us != y.time_us || x.id != y.id || x.size_bytes != y.size_bytes || x.action != y.action ||
        x.stream != y.stream) {
      return false;
    }
  }
  return true;
}

// Objects still live at the end of the trace, and their total size.
std::pair<std::size_t, std::uint64_t> live_at_end(const Trace& t) {
  std::map<std::uint64_t, std::uint64_t> live;
  for (const auto& e : t.events) {
    if (e.action == TraceAction::kAlloc)
      live[e.id] = e.size_bytes;
    else
      live.erase(e.id);
  }
  std::uint64_t bytes = 0;
  for (auto& [id, size] : live) bytes += size;
  return {live.size(), bytes};
}

TEST(WorkloadGen, SeededAndDeterministic) {
  for (const char* kind : {"training", "inference"}) {
    Trace a = generate_workload(kind, 7, 40);
    Trace b = generate_workload(kind, 7, 40);
    Trace c = generate_workload(kind, 8, 40);
    EXPECT_TRUE(same_events(a, b)) << kind;
    EXPECT_FALSE(same_events(a, c)) << kind;
    EXPECT_GT(a.events.size(), 100u) << kind;
  }
  EXPECT_THROW(generate_workload("serving", 1, 10), std::invalid_argument);
}

TEST(WorkloadGen, TrainingKeepsWeightsGradientsAndOptimizerStatesOnly) {
  // 24 layers: weights + gradients + 2 optimizer states persist; every
  // activation, saved tensor and temporary is freed within its step.
  for (std::uint64_t steps : {1u, 5u}) {
    Trace t = generate_training(3, steps);
    auto [count, bytes] = live_at_end(t);
    EXPECT_EQ(count, 24u * 4u);
    // The four persistent tensors of a layer have the same size.
    Trace w = generate_training(3, 1);
    EXPECT_EQ(bytes, live_at_end(w).second);
  }
  // Activations change size from step to step (growing/shrinking batches):
  // the event at t = step x 1 s (step >= 1) is layer 0's activation (at
  // t = 0 it is the first weight).
  Trace t = generate_training(3, 4);
  std::vector<std::uint64_t> first_act;
  for (const auto& e : t.events) {
    if (e.action == TraceAction::kAlloc && e.time_us >= static_cast<std::int64_t>(first_act.size()) * 1000000 &&
        e.time_us % 1000000 == 0) {
      first_act.push_back(e.size_bytes);
    }
  }
  ASSERT_EQ(first_act.size(), 4u);
  EXPECT_NE(first_act[1], first_act[2]);
  EXPECT_NE(first_act[2], first_act[3]);
}

TEST(WorkloadGen, InferenceCachesGrowTokenByToken) {
  Trace t = generate_inference(5, 300);
  // Growth steps: an alloc immediately followed by the free of a block that
  // is exactly one token (32 KiB) smaller.
  std::map<std::uint64_t, std::uint64_t> size_of;
  std::size_t growths = 0;
  for (std::size_t i = 0; i + 1 < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.action == TraceAction::kAlloc) size_of[e.id] = e.size_bytes;
    const auto& f = t.events[i + 1];
    if (e.action == TraceAction::kAlloc && f.action == TraceAction::kFree &&
        size_of[f.id] + 32 * 1024 == e.size_bytes) {
      ++growths;
    }
  }
  EXPECT_GT(growths, 1000u);
}

// The effect users report: on variable-length inference with growing KV
// caches, expandable segments reserve less memory and fragment less.
TEST(WorkloadGen, ExpandableSegmentsLowerPeakReservedOnInference) {
  Trace t = generate_inference(42, 1500);
  ReplayOptions opt;
  const ReplaySummary def = replay(t, parse_alloc_conf(""), opt).summary;
  const ReplaySummary exp = replay(t, parse_alloc_conf("expandable_segments:True"), opt).summary;
  EXPECT_EQ(def.ooms, 0u);
  EXPECT_EQ(exp.ooms, 0u);
  EXPECT_LT(exp.peak_reserved_bytes, def.peak_reserved_bytes);
  EXPECT_LT(exp.mean_fragmentation, def.mean_fragmentation);
  EXPECT_LT(exp.fragmentation_at_peak, def.fragmentation_at_peak);
  // Both serve the same requests: the allocated peaks differ only by rounding.
  EXPECT_NEAR(static_cast<double>(exp.peak_allocated_bytes), static_cast<double>(def.peak_allocated_bytes),
              0.05 * static_cast<double>(def.peak_allocated_bytes));
  // Under a cap between the two peaks, only the default runs out of memory,
  // and the recommendation picks expandable segments.
  opt.device_total_bytes = (exp.peak_reserved_bytes + def.peak_reserved_bytes) / 2;
  std::vector<ReplayResult> results = {replay(t, parse_alloc_conf(""), opt),
                                       replay(t, parse_alloc_conf("expandable_segments:True"), opt)};
  EXPECT_GT(results[0].summary.ooms + results[0].summary.alloc_retries, 0u);
  EXPECT_EQ(results[1].summary.ooms, 0u);
  std::string reason;
  EXPECT_EQ(recommend(results, &reason), 1u);
  EXPECT_NE(reason.find("expandable_segments:True"), std::string::npos);
}

}  // namespace
}  // namespace gpupack
