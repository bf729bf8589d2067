// Allocation traces for the allocator model: the event type and the readers
// and writers for the three accepted formats.
//
// 1. CSV, header "time_us,action,id,size_bytes,stream": one event per line,
//    action "alloc" or "free"; id is the caller's name for the tensor (a
//    non-negative integer, decimal or 0x-hex) and may be reused after a free;
//    size_bytes is required for alloc (> 0) and ignored for free; stream is
//    an integer (empty = 0). Lines starting with '#' and blank lines are
//    skipped.
// 2. JSON: {"events": [{"time_us":..,"action":"alloc","id":..,
//    "size_bytes":..,"stream":..}, ...]} with the same fields.
// 3. PyTorch memory snapshot as JSON ({"device_traces": [[...], ...]}): the
//    tensor-level "alloc" and "free_completed" (or older "free") entries of
//    one device are replayed, keyed by address; "free_requested",
//    segment_*, "oom", "snapshot" and other entries are skipped, and so is a
//    free with no earlier alloc (allocated before the ring buffer began).
//
// Contract: readers validate the whole input and throw std::runtime_error
// naming the file, line (CSV) or event index (JSON), field and value; on
// success every free refers to a live alloc and every event carries a dense
// `slot` (< Trace::slots) reused after frees, so a replayer can keep live
// blocks in a flat vector. Sizes are bytes, times microseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpupack {

enum class TraceAction : std::uint8_t { kAlloc, kFree };

struct TraceEvent {
  std::int64_t time_us = 0;
  std::uint64_t id = 0;
  std::uint64_t size_bytes = 0;  // alloc only
  std::uint32_t slot = 0;        // dense live-object index, set by finalize_trace
  std::int32_t stream = 0;
  TraceAction action = TraceAction::kAlloc;
};

struct Trace {
  std::vector<TraceEvent> events;
  std::uint32_t slots = 0;            // number of distinct slots used
  std::uint64_t skipped_frees = 0;    // snapshot frees with no earlier alloc
  std::uint64_t skipped_entries = 0;  // snapshot entries that are not alloc/free
};

// Validates ids (a free must follow a live alloc of the same id; an alloc must
// not reuse a live id) and assigns slots. `where(i)` in errors is "event i".
// Throws std::runtime_error mentioning `source`.
void finalize_trace(Trace& trace, const std::string& source);

Trace read_trace_csv(const std::string& path);
// Our JSON format, or a snapshot when the top level has "device_traces".
Trace read_trace_json(const std::string& path, int device = 0);
// Dispatches on the extension: .csv, else JSON.
Trace read_trace_file(const std::string& path, int device = 0);
Trace read_snapshot_json(const std::string& path, int device = 0);

void write_trace_csv(const Trace& trace, const std::string& path);

}  // namespace gpupack
