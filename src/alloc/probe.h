// Measuring free memory on a device: the largest single block that can be
// allocated now, found by allocate-and-free, and the external fragmentation
// 1 - largest / free.
//
// Contract: find_largest_block() only ever asks the allocator for sizes in
// [granularity, free] (never more than the free memory it was given), holds at
// most one allocation at a time and frees it before the next try, and stops
// after options.max_steps tries or options.time_budget, whichever comes
// first. The largest allocatable size is monotone (if s fits, any smaller
// size fits), so a binary search over multiples of the granularity finds it
// in at most 1 + ceil(log2(free / granularity + 1)) tries. Sizes in bytes.
// Not thread-safe; the allocator is borrowed, not owned.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpupack {

struct DeviceMemInfo {
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

// What the search needs from a device (or a fake).
class DeviceAllocator {
 public:
  using Handle = std::uint64_t;
  virtual ~DeviceAllocator() = default;
  // A plain device allocation of `bytes`; nullopt when it does not fit.
  virtual std::optional<Handle> try_alloc(std::uint64_t bytes) = 0;
  virtual void free(Handle handle) = 0;
  virtual DeviceMemInfo mem_info() = 0;
};

struct ProbeOptions {
  std::uint64_t granularity_bytes = 2ull * 1024 * 1024;  // 1 = exact bytes
  int max_steps = 64;
  std::chrono::milliseconds time_budget{2000};
};

struct LargestBlockResult {
  std::uint64_t largest_bytes = 0;  // a size known to fit (multiple of granularity, or free itself)
  int steps = 0;                    // allocation attempts made
  bool complete = false;            // false: stopped by the step or time bound (largest is a lower bound)
};

// Upper bound on the attempts find_largest_block makes for these inputs.
int max_search_steps(std::uint64_t free_bytes, std::uint64_t granularity_bytes);

LargestBlockResult find_largest_block(DeviceAllocator& allocator, std::uint64_t free_bytes,
                                      const ProbeOptions& options);

struct GpuProbe {
  int index = 0;
  std::string name;
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;
  std::uint64_t largest_free_block_bytes = 0;
  double external_fragmentation = 0;  // 1 - largest / free; 0 when nothing is free
  int steps = 0;
  bool complete = false;
};

// Reads mem_info, searches, and fills a GpuProbe.
GpuProbe probe_device(DeviceAllocator& allocator, int index, const std::string& name, const ProbeOptions& options);

std::string format_probe_table(const std::vector<GpuProbe>& gpus);
std::string format_probe_json(const std::vector<GpuProbe>& gpus);
// Prometheus text exposition format (for node_exporter's textfile collector).
std::string format_probe_prom(const std::vector<GpuProbe>& gpus);

}  // namespace gpupack
