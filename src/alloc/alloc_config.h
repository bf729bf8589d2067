// Configuration of the caching-allocator model, parsed from the
// PYTORCH_CUDA_ALLOC_CONF string syntax ("key:value,key:value", lists in
// brackets such as "roundup_power2_divisions:[256:1,>:8]").
//
// Contract: every size is in bytes. parse_alloc_conf() either returns a fully
// validated AllocConfig or throws std::invalid_argument naming the offending
// key and value; it never returns a partial result. Unknown keys are errors,
// as in PyTorch. Keys that only affect host (pinned) memory or locking are
// accepted and validated but have no effect on the model. Pure functions,
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace gpupack {

inline constexpr std::uint64_t kMiB = 1024ull * 1024ull;
inline constexpr std::uint64_t kGiB = 1024ull * kMiB;
inline constexpr std::uint64_t kUnlimitedBytes = std::numeric_limits<std::uint64_t>::max();

struct AllocConfig {
  std::string text;  // the string it was parsed from ("" = defaults)
  // Blocks at least this large are never split; kUnlimitedBytes = off.
  std::uint64_t max_split_size_bytes = kUnlimitedBytes;
  // A request >= max_split_size refuses a cached block >= request + this.
  std::uint64_t max_non_split_rounding_bytes = 20 * kMiB;
  // Divisions per power-of-two interval, indexed by floor(log2 size) - 20,
  // clamped to 0..15 (entry 0 covers everything below 2 MiB). 0 = off.
  std::array<std::uint32_t, 16> roundup_power2_divisions{};
  // 0 = off; otherwise strictly between 0 and 1. Needs a memory fraction.
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  // Per-process memory fraction of the device cap (newer key); unset = none.
  std::optional<double> per_process_memory_fraction;
  // cudaMalloc size for rounded requests in (1 MiB, 10 MiB).
  std::uint64_t large_segment_size_bytes = 20 * kMiB;
  std::string backend = "native";
};

// Parses a PYTORCH_CUDA_ALLOC_CONF string. Throws std::invalid_argument.
AllocConfig parse_alloc_conf(std::string_view text);

// Parses a byte count such as "81920", "80GiB", "512MiB", "2.5GB" (SI) or
// "1KiB". Throws std::invalid_argument naming `what` and the value.
std::uint64_t parse_bytes(std::string_view text, std::string_view what);

}  // namespace gpupack
