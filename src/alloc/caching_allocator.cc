#include "alloc/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <stdexcept>

namespace gpupack {
namespace {

std::uint64_t divisions_for(std::uint64_t bytes, const AllocConfig& config) {
  const int log_size = std::bit_width(bytes) - 1;
  constexpr int kIntervalStart = 20;  // 1 MiB
  std::size_t index = log_size > kIntervalStart ? static_cast<std::size_t>(log_size - kIntervalStart) : 0;
  index = std::min<std::size_t>(index, config.roundup_power2_divisions.size() - 1);
  return config.roundup_power2_divisions[index];
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

std::uint64_t round_request_size(std::uint64_t bytes, const AllocConfig& config) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const std::uint64_t divisions = divisions_for(bytes, config);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) {
    if (std::has_single_bit(bytes)) return bytes;
    const std::uint64_t floor = std::bit_floor(bytes);
    const std::uint64_t step = floor / divisions;
    if (step == 0) return floor << 1;
    const std::uint64_t down = bytes & ~(step - 1);
    return down == bytes ? bytes : down + step;
  }
  return round_up(bytes, kMinBlockSize);
}

std::uint64_t segment_size_for(std::uint64_t rounded, const AllocConfig& config) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return config.large_segment_size_bytes;
  return round_up(rounded, kRoundLarge);
}

CachingAllocatorModel::CachingAllocatorModel(const AllocConfig& config, std::uint64_t device_total_bytes)
    : config_(config), device_total_(device_total_bytes) {
  small_.small = true;
  large_.small = false;
}

bool CachingAllocatorModel::gc_enabled() const {
  return config_.per_process_memory_fraction.has_value() && config_.garbage_collection_threshold > 0.0;
}

std::uint64_t CachingAllocatorModel::memory_limit() const {
  if (!config_.per_process_memory_fraction) return device_total_;
  return static_cast<std::uint64_t>(*config_.per_process_memory_fraction * static_cast<double>(device_total_));
}

// ---------------------------------------------------------------- storage

Block* CachingAllocatorModel::new_block() {
  if (!free_blocks_.empty()) {
    Block* b = free_blocks_.back();
    free_blocks_.pop_back();
    *b = Block{};
    return b;
  }
  return &block_storage_.emplace_back();
}

void CachingAllocatorModel::recycle(Block* block) {
  block->segment = nullptr;  // marks the slot unused for blocks()
  free_blocks_.push_back(block);
}

Segment* CachingAllocatorModel::new_segment(std::uint64_t size, std::uint64_t page, bool expandable) {
  Segment* s = nullptr;
  if (!free_segments_.empty()) {
    s = free_segments_.back();
    free_segments_.pop_back();
  } else {
    s = &segment_storage_.emplace_back();
  }
  *s = Segment{next_addr_, size, page, expandable};
  next_addr_ += round_up(size, kSmallBuffer);
  return s;
}

void CachingAllocatorModel::recycle(Segment* segment) { free_segments_.push_back(segment); }

void CachingAllocatorModel::add_reserved(std::uint64_t bytes) {
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

// ---------------------------------------------------------------- malloc

BlockRef CachingAllocatorModel::malloc(std::uint64_t bytes, std::int32_t stream) {
  if (bytes == 0) throw std::invalid_argument("allocator model: malloc of 0 bytes");
  const std::uint64_t rounded = round_request_size(bytes, config_);
  Pool& pool = pool_for(rounded);

  Block* block = get_free_block(pool, stream, rounded);
  if (block == nullptr) {
    if (gc_enabled()) garbage_collect();
    block = alloc_block(pool, stream, rounded, false);
    if (block == nullptr && release_available(pool, stream, rounded)) {
      block = alloc_block(pool, stream, rounded, false);
    }
    if (block == nullptr) {
      release_cached_blocks();
      block = alloc_block(pool, stream, rounded, true);
    }
  }
  if (block == nullptr) {
    ++stats_.num_ooms;
    return nullptr;
  }
  alloc_found_block(pool, block, rounded, bytes);
  return block;
}

std::uint64_t CachingAllocatorModel::expandable_size(const Block* b) const {
  return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
}

Block* CachingAllocatorModel::get_free_block(Pool& pool, std::int32_t stream, std::uint64_t rounded) {
  if (gc_enabled()) ++pool.searches;
  Block key;
  key.stream = stream;
  key.size = rounded;
  key.addr = 0;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  if ((*it)->segment->expandable) {
    if (!config_.expandable_segments) return nullptr;
    // Best fit counts a block's unmapped tail as part of its size.
    auto next = std::next(it);
    while (next != pool.blocks.end() && (*next)->stream == stream && (*it)->segment->expandable &&
           expandable_size(*next) < expandable_size(*it)) {
      it = next++;
    }
  }
  const std::uint64_t mss = config_.max_split_size_bytes;
  if (rounded < mss && (*it)->size >= mss) return nullptr;  // no oversize block for a normal request
  if (rounded >= mss && (*it)->size >= rounded + config_.max_non_split_rounding_bytes) return nullptr;
  Block* block = *it;
  pool.blocks.erase(it);
  return block;
}

Block* CachingAllocatorModel::alloc_block(Pool& pool, std::int32_t stream, std::uint64_t rounded, bool retry) {
  if (retry) ++stats_.num_alloc_retries;
  if (config_.expandable_segments) return alloc_expandable(pool, stream, rounded);
  const std::uint64_t size = segment_size_for(rounded, config_);
  if (stats_.reserved_bytes + size > memory_limit()) return nullptr;
  Segment* seg = new_segment(size, 0, false);
  Block* b = new_block();
  b->addr = seg->base;
  b->size = size;
  b->stream = stream;
  b->small = pool.small;
  b->segment = seg;
  add_reserved(size);
  ++stats_.segments;
  ++stats_.num_device_alloc;
  return b;  // not in the free set; the caller splits and hands it out
}

// ------------------------------------------------------- expandable segments

Block* CachingAllocatorModel::find_expandable(Pool& pool, std::int32_t stream, std::uint64_t rounded) {
  auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
  auto has_room = [&](const Block* b) {
    std::uint64_t bytes = 0;
    while (bytes < rounded && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= rounded;
  };
  Block key;
  key.stream = stream;
  key.addr = 0;
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;  // a free block just before the unmapped range
    if (has_room(c)) return c;
  }
  // Nothing fits: reserve a new virtual range of 1.125 x device memory.
  const std::uint64_t page = pool.small ? kSmallBuffer : kLargeBuffer;
  const std::uint64_t pages = (device_total_ + device_total_ / 8 + page - 1) / page;
  Segment* seg = new_segment(std::max<std::uint64_t>(pages, 1) * page, page, true);
  Block* b = new_block();
  b->addr = seg->base;
  b->size = seg->size;
  b->stream = stream;
  b->small = pool.small;
  b->mapped = false;
  b->segment = seg;
  pool.unmapped.insert(b);
  return b;
}

bool CachingAllocatorModel::map_block(Pool& pool, Block* to_map, std::uint64_t bytes) {
  assert(!to_map->mapped && bytes <= to_map->size);
  const std::uint64_t page = to_map->segment->page;
  const std::uint64_t mapped = std::min(round_up(bytes, page), to_map->size);
  if (stats_.reserved_bytes + mapped > memory_limit()) return false;
  pool.unmapped.erase(to_map);
  if (to_map->size > mapped) {
    Block* rest = new_block();
    rest->addr = to_map->addr + mapped;
    rest->size = to_map->size - mapped;
    rest->stream = to_map->stream;
    rest->small = to_map->small;
    rest->mapped = false;
    rest->segment = to_map->segment;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    to_map->next = rest;
    to_map->size = mapped;
    pool.unmapped.insert(rest);
  }
  to_map->mapped = true;
  try_merge(pool, to_map, to_map->prev);
  try_merge(pool, to_map, to_map->next);
  pool.blocks.insert(to_map);
  add_reserved(mapped);
  ++stats_.num_device_alloc;
  return true;
}

Block* CachingAllocatorModel::alloc_expandable(Pool& pool, std::int32_t stream, std::uint64_t rounded) {
  if (rounded > memory_limit()) return nullptr;  // could never be mapped
  Block* candidate = find_expandable(pool, stream, rounded);
  // candidate is free -> unmapped -> ..., or unmapped -> (free) -> ...
  if (!candidate->mapped && !map_block(pool, candidate, std::min(candidate->size, rounded))) return nullptr;
  while (candidate->size < rounded) {
    Block* next = candidate->next;
    if (next == nullptr || next->allocated || next->mapped) return nullptr;  // range exhausted
    if (!map_block(pool, next, std::min(rounded - candidate->size, next->size))) return nullptr;
    candidate = next;  // map_block merged the previous candidate into it
  }
  pool.blocks.erase(candidate);
  return candidate;
}

void CachingAllocatorModel::unmap_block(Pool& pool, Block* block) {
  const Segment& seg = *block->segment;
  const std::uint64_t page = seg.page;
  // Only whole pages strictly inside the block.
  const std::uint64_t begin = seg.base + round_up(block->addr - seg.base, page);
  const std::uint64_t end = seg.base + (block->addr + block->size - seg.base) / page * page;
  if (end <= begin) return;
  pool.blocks.erase(block);
  const std::uint64_t before = begin - block->addr;
  const std::uint64_t after = block->addr + block->size - end;
  if (before > 0) {
    Block* b = new_block();
    b->addr = block->addr;
    b->size = before;
    b->stream = block->stream;
    b->small = block->small;
    b->segment = block->segment;
    b->prev = block->prev;
    b->next = block;
    if (b->prev != nullptr) b->prev->next = b;
    block->prev = b;
    b->gc_base = pool.searches;
    pool.blocks.insert(b);
  }
  if (after > 0) {
    Block* a = new_block();
    a->addr = end;
    a->size = after;
    a->stream = block->stream;
    a->small = block->small;
    a->segment = block->segment;
    a->prev = block;
    a->next = block->next;
    if (a->next != nullptr) a->next->prev = a;
    block->next = a;
    a->gc_base = pool.searches;
    pool.blocks.insert(a);
  }
  block->addr = begin;
  block->size = end - begin;
  block->mapped = false;
  try_merge(pool, block, block->prev);
  try_merge(pool, block, block->next);
  pool.unmapped.insert(block);
  stats_.reserved_bytes -= end - begin;
  ++stats_.num_device_free;
}

// ---------------------------------------------------------- split and merge

void CachingAllocatorModel::alloc_found_block(Pool& pool, Block* block, std::uint64_t rounded,
                                              std::uint64_t requested) {
  const std::uint64_t remaining = block->size - rounded;
  const bool split = (pool.small || config_.expandable_segments)
                         ? remaining >= kMinBlockSize
                         : (rounded < config_.max_split_size_bytes && remaining > kSmallSize);
  if (split) {
    Block* rest = new_block();
    rest->addr = block->addr + rounded;
    rest->size = remaining;
    rest->stream = block->stream;
    rest->small = block->small;
    rest->segment = block->segment;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    block->next = rest;
    block->size = rounded;
    rest->gc_base = pool.searches;
    pool.blocks.insert(rest);
  }
  block->allocated = true;
  block->requested = requested;
  stats_.allocated_bytes += block->size;
  stats_.requested_bytes += requested;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
}

std::uint64_t CachingAllocatorModel::try_merge(Pool& pool, Block* dst, Block* src) {
  if (src == nullptr || src->allocated || src->mapped != dst->mapped) return 0;
  if (src->mapped) {
    pool.blocks.erase(src);
  } else {
    pool.unmapped.erase(src);
  }
  if (dst->prev == src) {
    dst->addr = src->addr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const std::uint64_t merged = src->size;
  dst->size += merged;
  recycle(src);
  return merged;
}

void CachingAllocatorModel::free(BlockRef ref) {
  Block* block = const_cast<Block*>(ref);
  if (block == nullptr || !block->allocated)
    throw std::invalid_argument("allocator model: free of a block that is not allocated");
  Pool& pool = block->small ? small_ : large_;
  stats_.allocated_bytes -= block->size;
  stats_.requested_bytes -= block->requested;
  block->allocated = false;
  block->requested = 0;
  free_block(pool, block);
}

void CachingAllocatorModel::free_block(Pool& pool, Block* block) {
  try_merge(pool, block, block->prev);
  try_merge(pool, block, block->next);
  block->gc_base = pool.searches;
  pool.blocks.insert(block);
}

// ------------------------------------------------------------ release paths

void CachingAllocatorModel::release_block(Pool& pool, Block* block) {
  assert(block->prev == nullptr && block->next == nullptr && !block->segment->expandable);
  pool.blocks.erase(block);
  stats_.reserved_bytes -= block->size;
  --stats_.segments;
  ++stats_.num_device_free;
  recycle(block->segment);
  recycle(block);
}

void CachingAllocatorModel::garbage_collect() {
  const auto limit =
      static_cast<std::uint64_t>(config_.garbage_collection_threshold * static_cast<double>(memory_limit()));
  if (stats_.reserved_bytes <= limit) return;
  const std::uint64_t target = stats_.reserved_bytes - limit;
  auto releasable = [](const Block* b) { return b->prev == nullptr && b->next == nullptr && !b->segment->expandable; };
  double total_age = 0;
  std::uint64_t count = 0;
  for (const Block* b : large_.blocks) {
    if (releasable(b)) {
      total_age += static_cast<double>(large_.searches - b->gc_base);
      ++count;
    }
  }
  std::uint64_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    const double mean_age = total_age / static_cast<double>(count);
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* b = *it++;
      const auto age = static_cast<double>(large_.searches - b->gc_base);
      if (releasable(b) && age >= mean_age) {
        freed = true;
        reclaimed += b->size;
        total_age -= age;
        --count;
        ++stats_.num_gc_releases;
        release_block(large_, b);
      }
    }
  }
}

bool CachingAllocatorModel::release_available(Pool& pool, std::int32_t stream, std::uint64_t rounded) {
  const std::uint64_t mss = config_.max_split_size_bytes;
  if (mss == kUnlimitedBytes) return false;
  Block key;
  key.stream = stream;
  key.size = std::max(rounded, mss);
  key.addr = 0;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream || (*it)->segment->expandable) {
    // No single block is large enough: free oversize blocks from the largest down.
    if (it == pool.blocks.begin()) return false;
    --it;
    std::uint64_t released = 0;
    while (released < key.size && (*it)->size >= mss && (*it)->stream == stream) {
      auto cur = it;
      const bool first = cur == pool.blocks.begin();
      if (!first) --it;
      Block* b = *cur;
      if (!b->segment->expandable && b->prev == nullptr && b->next == nullptr) {
        released += b->size;
        release_block(pool, b);
      }
      if (first) break;
    }
    return released >= key.size;
  }
  Block* b = *it;
  if (b->prev != nullptr || b->next != nullptr) return false;  // part of a split segment
  release_block(pool, b);
  return true;
}

void CachingAllocatorModel::release_pool(Pool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* b = *it++;
    if (b->segment->expandable) {
      to_unmap.push_back(b);
    } else if (b->prev == nullptr && b->next == nullptr) {
      release_block(pool, b);
    }
  }
  for (Block* b : to_unmap) {
    unmap_block(pool, b);
    if (!b->mapped && b->prev == nullptr && b->next == nullptr) {
      // The whole virtual range is unmapped: give it back.
      pool.unmapped.erase(b);
      recycle(b->segment);
      recycle(b);
    }
  }
}

void CachingAllocatorModel::release_cached_blocks() {
  release_pool(large_);
  release_pool(small_);
}

void CachingAllocatorModel::empty_cache() { release_cached_blocks(); }

// ----------------------------------------------------------------- reports

std::uint64_t CachingAllocatorModel::largest_free_block() const {
  std::uint64_t best = 0;
  for (const Pool* pool : {&small_, &large_}) {
    // The last block of each stream's run is that stream's largest.
    auto it = pool->blocks.begin();
    while (it != pool->blocks.end()) {
      Block key;
      key.stream = (*it)->stream;
      key.size = kUnlimitedBytes;
      key.addr = kUnlimitedBytes;
      auto end = pool->blocks.upper_bound(&key);
      best = std::max(best, (*std::prev(end))->size);
      it = end;
    }
  }
  return best;
}

BlockView CachingAllocatorModel::view(BlockRef b) {
  return BlockView{b->addr,  b->size,      b->requested, b->stream,
                   b->small, b->allocated, b->mapped,    b->segment != nullptr ? b->segment->base : 0};
}

std::vector<BlockView> CachingAllocatorModel::blocks() const {
  std::vector<BlockView> out;
  for (const Block& b : block_storage_) {
    if (b.segment != nullptr) out.push_back(view(&b));
  }
  std::sort(out.begin(), out.end(), [](const BlockView& a, const BlockView& b) { return a.addr < b.addr; });
  return out;
}

}  // namespace gpupack
