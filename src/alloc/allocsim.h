// Replays an allocation trace through the caching-allocator model under one or
// more configurations and compares them.
//
// Contract: replay() is deterministic for a given trace, config and options.
// A failed (out-of-memory) alloc is recorded and the trace goes on; the later
// free of that object is ignored. Series points are taken every
// `sample_every` events (0 = about 2000 points in all) plus the last event;
// summary figures (peaks, byte-weighted fragmentation) use every event.
// Sizes in bytes. Complexity O(events x log blocks). Not thread-safe per
// call; separate calls share nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloc/alloc_config.h"
#include "alloc/trace_io.h"

namespace gpupack {

struct ReplayOptions {
  std::uint64_t device_total_bytes = 80 * kGiB;  // device memory cap
  std::uint64_t sample_every = 0;
};

struct SeriesPoint {
  std::uint64_t event = 0;  // index of the event just applied
  std::int64_t time_us = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  double fragmentation = 0;  // (reserved - allocated) / reserved, 0 if none reserved
  std::uint64_t largest_free_block_bytes = 0;
  std::uint64_t device_allocs = 0;
  std::uint64_t ooms = 0;
};

struct OomInfo {
  std::uint64_t event = 0;
  std::int64_t time_us = 0;
  std::uint64_t request_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocated_bytes = 0;
};

struct ReplaySummary {
  std::string config;  // the configuration string ("" = defaults)
  std::uint64_t events = 0;
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  double fragmentation_at_peak = 0;  // at the first event reaching peak reserved
  double mean_fragmentation = 0;     // sum(reserved - allocated) / sum(reserved) over events
  std::uint64_t final_reserved_bytes = 0;
  std::uint64_t final_largest_free_block_bytes = 0;
  std::uint64_t device_allocs = 0;
  std::uint64_t device_frees = 0;
  std::uint64_t alloc_retries = 0;
  std::uint64_t ooms = 0;
  std::optional<OomInfo> first_oom;
};

struct ReplayResult {
  ReplaySummary summary;
  std::vector<SeriesPoint> series;
};

ReplayResult replay(const Trace& trace, const AllocConfig& config, const ReplayOptions& options);

// Index of the recommended result: lowest peak reserved among those without
// an OOM (ties: fewer device allocations, then the earlier one). If all ran
// out of memory, the one whose first OOM came latest. `reason` gets one
// sentence explaining the choice. Requires a non-empty list.
std::size_t recommend(const std::vector<ReplayResult>& results, std::string* reason);

// The default comparison set used when no --config is given.
std::vector<std::string> default_comparison_configs();

// Human-readable comparison table (one row per result).
std::string format_comparison_table(const std::vector<ReplayResult>& results);
// JSON summary of every result plus the recommendation.
std::string format_comparison_json(const std::vector<ReplayResult>& results);
// Writes series.csv (one row per sample and config), summary.json and
// memory.svg (replay_svg) into dir (created if missing). Throws
// std::runtime_error on I/O errors.
void write_replay_outputs(const std::vector<ReplayResult>& results, const std::string& dir);
// Reserved and allocated memory over the events, one color per config.
std::string replay_svg(const std::vector<ReplayResult>& results);

}  // namespace gpupack
