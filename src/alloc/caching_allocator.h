// A model of PyTorch's CUDA caching allocator (native backend) that keeps
// only bookkeeping: no device memory is touched. It follows the rules in the
// project's reference notes on the allocator: size rounding (512 B minimum,
// roundup_power2_divisions), small (<= 1 MiB) and large pools, segment sizes
// (2 MiB / 20 MiB / rounded to 2 MiB), best-fit search on (stream, size,
// address), splitting limits, max_split_size (oversize blocks are never split,
// oversize reuse rule), expandable segments (pages mapped on demand),
// garbage_collection_threshold, empty_cache, per-stream pools, and the
// out-of-memory path (free cached blocks, retry, then report OOM) under a
// device memory cap.
//
// Contract: sizes are bytes; addresses are model addresses (never real
// pointers). malloc() returns an opaque BlockRef (nullptr on OOM) that stays
// valid until passed to free() exactly once. Events (record_stream) are not
// modelled: a free completes at once. Complexity: malloc/free are
// O(log n) in the number of cached blocks except on the miss path
// (GC / cache release walk the pools). Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

#include "alloc/alloc_config.h"

namespace gpupack {

inline constexpr std::uint64_t kMinBlockSize = 512;         // every block is a multiple
inline constexpr std::uint64_t kSmallSize = 1 * kMiB;       // pool boundary
inline constexpr std::uint64_t kSmallBuffer = 2 * kMiB;     // small-pool segment / page
inline constexpr std::uint64_t kLargeBuffer = 20 * kMiB;    // large-pool segment / page
inline constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;  // below: 20 MiB segments
inline constexpr std::uint64_t kRoundLarge = 2 * kMiB;      // large segment rounding

// Rounds a requested size as the allocator does (512 B minimum and multiple,
// or the next power-of-two division when roundup_power2_divisions applies).
std::uint64_t round_request_size(std::uint64_t bytes, const AllocConfig& config);

// cudaMalloc size for a rounded request (non-expandable mode).
std::uint64_t segment_size_for(std::uint64_t rounded_bytes, const AllocConfig& config);

struct AllocStats {
  std::uint64_t allocated_bytes = 0;  // sum of live (rounded) block sizes
  std::uint64_t requested_bytes = 0;  // sum of live caller sizes
  std::uint64_t reserved_bytes = 0;   // cudaMalloc'd segments + mapped pages
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t segments = 0;           // live non-expandable segments
  std::uint64_t num_device_alloc = 0;   // cudaMalloc calls + page-map calls
  std::uint64_t num_device_free = 0;    // cudaFree calls + page-unmap calls
  std::uint64_t num_alloc_retries = 0;  // retries after releasing the whole cache
  std::uint64_t num_ooms = 0;
  std::uint64_t num_gc_releases = 0;  // segments freed by garbage collection
};

struct Segment;

struct Block {
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;  // caller size while allocated
  std::int32_t stream = 0;
  bool small = false;  // small pool (<= 1 MiB) or large pool
  bool allocated = false;
  bool mapped = true;     // false: unmapped range of an expandable segment
  Block* prev = nullptr;  // neighbours in the same segment, by address
  Block* next = nullptr;
  Segment* segment = nullptr;
  std::uint64_t gc_base = 0;  // pool search count when the block was freed
};

struct Segment {
  std::uint64_t base = 0;
  std::uint64_t size = 0;  // bytes (virtual size for expandable ones)
  std::uint64_t page = 0;  // mapping granularity (expandable only)
  bool expandable = false;
};

using BlockRef = const Block*;

// Read-only view of one block, for reports and tests.
struct BlockView {
  std::uint64_t addr, size, requested;
  std::int32_t stream;
  bool small, allocated, mapped;
  std::uint64_t segment_base;
};

class CachingAllocatorModel {
 public:
  // device_total_bytes is the device memory cap: cudaMalloc (or a page map)
  // fails when reserved would exceed it (or fraction x cap when a
  // per-process memory fraction is set).
  CachingAllocatorModel(const AllocConfig& config, std::uint64_t device_total_bytes);
  ~CachingAllocatorModel() = default;
  CachingAllocatorModel(const CachingAllocatorModel&) = delete;
  CachingAllocatorModel& operator=(const CachingAllocatorModel&) = delete;

  // Allocates `bytes` (> 0) on `stream`; nullptr means out of memory (after
  // the cache was released and the allocation retried).
  BlockRef malloc(std::uint64_t bytes, std::int32_t stream = 0);
  void free(BlockRef block);
  // Releases every cached segment that is entirely free (and unmaps whole
  // free pages of expandable segments).
  void empty_cache();

  const AllocStats& stats() const { return stats_; }
  const AllocConfig& config() const { return config_; }
  std::uint64_t device_total_bytes() const { return device_total_; }
  // Largest free mapped (cached) block over both pools and all streams.
  std::uint64_t largest_free_block() const;
  // All blocks of all segments in address order (O(n), for tests/reports).
  std::vector<BlockView> blocks() const;
  static BlockView view(BlockRef block);

 private:
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      if (a->size != b->size) return a->size < b->size;
      return a->addr < b->addr;
    }
  };
  struct ByAddr {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      return a->addr < b->addr;
    }
  };
  struct Pool {
    bool small = false;
    std::set<Block*, BySize> blocks;    // free, mapped blocks
    std::set<Block*, ByAddr> unmapped;  // unmapped ranges of expandable segments
    std::uint64_t searches = 0;         // get_free_block calls (GC ages)
  };

  Pool& pool_for(std::uint64_t rounded) { return rounded <= kSmallSize ? small_ : large_; }
  bool gc_enabled() const;
  std::uint64_t memory_limit() const;
  Block* get_free_block(Pool& pool, std::int32_t stream, std::uint64_t rounded);
  Block* alloc_block(Pool& pool, std::int32_t stream, std::uint64_t rounded, bool retry);
  Block* alloc_expandable(Pool& pool, std::int32_t stream, std::uint64_t rounded);
  Block* find_expandable(Pool& pool, std::int32_t stream, std::uint64_t rounded);
  bool map_block(Pool& pool, Block* to_map, std::uint64_t bytes);
  void unmap_block(Pool& pool, Block* block);
  void garbage_collect();
  bool release_available(Pool& pool, std::int32_t stream, std::uint64_t rounded);
  void release_cached_blocks();
  void release_pool(Pool& pool);
  void release_block(Pool& pool, Block* block);
  void alloc_found_block(Pool& pool, Block* block, std::uint64_t rounded, std::uint64_t requested);
  void free_block(Pool& pool, Block* block);
  std::uint64_t try_merge(Pool& pool, Block* dst, Block* src);
  void add_reserved(std::uint64_t bytes);
  std::uint64_t expandable_size(const Block* block) const;

  Block* new_block();
  void recycle(Block* block);
  Segment* new_segment(std::uint64_t size, std::uint64_t page, bool expandable);
  void recycle(Segment* segment);

  AllocConfig config_;
  std::uint64_t device_total_;
  AllocStats stats_;
  Pool small_;
  Pool large_;
  std::uint64_t next_addr_ = 1ull << 32;  // model address space, never reused
  std::deque<Block> block_storage_;
  std::vector<Block*> free_blocks_;
  std::deque<Segment> segment_storage_;
  std::vector<Segment*> free_segments_;
};

}  // namespace gpupack
