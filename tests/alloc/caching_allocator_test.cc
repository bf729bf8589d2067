// Each test pins one allocator rule on a short hand-made sequence whose
// outcome follows from the rules (sizes chosen so the arithmetic is easy).
#include "alloc/caching_allocator.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

constexpr std::uint64_t MiB = kMiB;

AllocConfig conf(const char* text) { return parse_alloc_conf(text); }

TEST(Rounding, MinimumAndMultipleOf512) {
  AllocConfig c;
  EXPECT_EQ(round_request_size(1, c), 512u);
  EXPECT_EQ(round_request_size(511, c), 512u);
  EXPECT_EQ(round_request_size(512, c), 512u);
  EXPECT_EQ(round_request_size(513, c), 1024u);
  EXPECT_EQ(round_request_size(1200 * MiB, c), 1200 * MiB);
  EXPECT_EQ(round_request_size(4500, c), 4608u);
}

TEST(Rounding, PowerOfTwoDivisions) {
  AllocConfig c = conf("roundup_power2_divisions:4");
  EXPECT_EQ(round_request_size(1200 * MiB, c), 1280 * MiB);  // the documented example
  EXPECT_EQ(round_request_size(1024 * MiB, c), 1024 * MiB);  // powers of two stay
  EXPECT_EQ(round_request_size(4500, c), 5120u);             // 4096 + 1024
  // Only applies above 512 x divisions bytes; below, plain 512 rounding.
  EXPECT_EQ(round_request_size(1500, c), 1536u);
  // Per-interval table: 1 division below 512 MiB, 4 from 1 GiB.
  AllocConfig l = conf("roundup_power2_divisions:[256:1,>:4]");
  EXPECT_EQ(round_request_size(300 * MiB + 1, l), 300 * MiB + 512);
  EXPECT_EQ(round_request_size(1200 * MiB, l), 1280 * MiB);
}

TEST(Segments, SizesPerPoolAndRequest) {
  AllocConfig c;
  EXPECT_EQ(segment_size_for(512, c), 2 * MiB);
  EXPECT_EQ(segment_size_for(1 * MiB, c), 2 * MiB);
  EXPECT_EQ(segment_size_for(1 * MiB + 512, c), 20 * MiB);
  EXPECT_EQ(segment_size_for(10 * MiB - 512, c), 20 * MiB);
  EXPECT_EQ(segment_size_for(10 * MiB, c), 10 * MiB);
  EXPECT_EQ(segment_size_for(11 * MiB + 512, c), 12 * MiB);
}

TEST(Pools, SmallAndLargePoolBoundaryAtOneMiB) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  BlockRef small = m.malloc(1 * MiB);
  EXPECT_TRUE(CachingAllocatorModel::view(small).small);
  EXPECT_EQ(m.stats().reserved_bytes, 2 * MiB);
  BlockRef large = m.malloc(1 * MiB + 1);
  EXPECT_FALSE(CachingAllocatorModel::view(large).small);
  EXPECT_EQ(m.stats().reserved_bytes, 22 * MiB);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);
  // A free small block is never used for a large request and vice versa.
  m.free(small);
  m.malloc(1 * MiB + 1);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);  // fits the large segment's remainder
  m.malloc(4096);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);  // reuses the small segment
}

TEST(Split, SmallPoolSplitsDownTo512BytesAndPlacesLow) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  BlockRef a = m.malloc(1 * MiB);
  BlockRef b = m.malloc(1 * MiB - 512);  // leaves exactly 512 B: still split
  BlockRef c = m.malloc(100);            // rounded to 512, takes that sliver
  EXPECT_EQ(m.stats().num_device_alloc, 1u);
  auto va = CachingAllocatorModel::view(a), vb = CachingAllocatorModel::view(b), vc = CachingAllocatorModel::view(c);
  EXPECT_EQ(vb.addr, va.addr + 1 * MiB);
  EXPECT_EQ(vc.addr, vb.addr + 1 * MiB - 512);
  EXPECT_EQ(vc.size, 512u);
  EXPECT_EQ(m.stats().allocated_bytes, 2 * MiB);
  EXPECT_EQ(m.stats().requested_bytes, 2 * MiB - 512 + 100);
}

TEST(Split, LargePoolSplitsOnlyWhenMoreThanOneMiBRemains) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  // 2 MiB requests get a 20 MiB segment; 18 MiB remains: split.
  BlockRef a = m.malloc(2 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(a).size, 2 * MiB);
  // 17 MiB more leaves exactly 1 MiB: not split, the whole 18 MiB is handed out.
  BlockRef b = m.malloc(17 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(b).size, 18 * MiB);
  EXPECT_EQ(m.stats().allocated_bytes, 20 * MiB);
  EXPECT_EQ(m.stats().num_device_alloc, 1u);
  m.free(b);
  // 17 MiB - 512 leaves 1 MiB + 512: split.
  BlockRef c = m.malloc(17 * MiB - 512);
  EXPECT_EQ(CachingAllocatorModel::view(c).size, 17 * MiB - 512);
  EXPECT_EQ(m.largest_free_block(), 1 * MiB + 512);
}

TEST(Select, BestFitSameStreamLowestAddressOnTies) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  BlockRef a = m.malloc(40 * MiB);
  BlockRef keep1 = m.malloc(12 * MiB);
  BlockRef b = m.malloc(30 * MiB);
  BlockRef c = m.malloc(30 * MiB);
  (void)keep1;
  const auto addr_b = CachingAllocatorModel::view(b).addr;
  m.free(a);
  m.free(c);
  m.free(b);
  // 30 MiB blocks b and c are both the smallest fit: b has the lower address.
  BlockRef d = m.malloc(29 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(d).addr, addr_b);
  EXPECT_EQ(m.stats().num_device_alloc, 4u);
}

TEST(Merge, FreedNeighboursMergeWithinASegmentOnly) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  BlockRef a = m.malloc(4 * MiB);
  BlockRef b = m.malloc(4 * MiB);
  BlockRef c = m.malloc(4 * MiB);
  m.free(a);
  m.free(b);
  // a+b merged into one 8 MiB block at a's address; the rest (8 MiB) is behind c.
  EXPECT_EQ(m.largest_free_block(), 8 * MiB);
  BlockRef d = m.malloc(7 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(d).addr, CachingAllocatorModel::view(a).addr);
  m.free(c);
  m.free(d);
  EXPECT_EQ(m.largest_free_block(), 20 * MiB);  // the whole segment again
  BlockRef e = m.malloc(30 * MiB);              // never merges across segments
  (void)e;
  EXPECT_EQ(m.stats().num_device_alloc, 2u);
}

TEST(MaxSplitSize, NormalRequestRefusesOversizeBlock) {
  CachingAllocatorModel limited(conf("max_split_size_mb:128"), 80 * kGiB);
  limited.free(limited.malloc(200 * MiB));
  BlockRef x = limited.malloc(100 * MiB);
  EXPECT_EQ(limited.stats().num_device_alloc, 2u);  // the cached 200 MiB block is oversize
  EXPECT_EQ(CachingAllocatorModel::view(x).size, 100 * MiB);

  CachingAllocatorModel unlimited(AllocConfig{}, 80 * kGiB);
  unlimited.free(unlimited.malloc(200 * MiB));
  BlockRef y = unlimited.malloc(100 * MiB);
  EXPECT_EQ(unlimited.stats().num_device_alloc, 1u);  // reused and split
  EXPECT_EQ(CachingAllocatorModel::view(y).size, 100 * MiB);
}

TEST(MaxSplitSize, OversizeBlocksAreNotSplitAndReuseNeedsCloseSize) {
  CachingAllocatorModel m(conf("max_split_size_mb:128"), 80 * kGiB);
  BlockRef big = m.malloc(200 * MiB);
  m.free(big);
  // 181 MiB >= MSS and 200 < 181 + 20: reused whole, not split.
  BlockRef a = m.malloc(181 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(a).size, 200 * MiB);
  EXPECT_EQ(m.stats().allocated_bytes, 200 * MiB);
  EXPECT_EQ(m.stats().num_device_alloc, 1u);
  m.free(a);
  // 180 MiB: 200 >= 180 + 20, refused: a new segment.
  BlockRef b = m.malloc(180 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(b).size, 180 * MiB);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);
  // max_non_split_rounding_mb widens the reuse window.
  CachingAllocatorModel w(conf("max_split_size_mb:128,max_non_split_rounding_mb:40"), 80 * kGiB);
  w.free(w.malloc(200 * MiB));
  w.malloc(180 * MiB);
  EXPECT_EQ(w.stats().num_device_alloc, 1u);
}

TEST(MaxSplitSize, OnMissFreesOversizeCachedBlockBeforeWholeCache) {
  // Cap 400 MiB; cached: a 200 MiB oversize block and a 100 MiB normal one.
  // 150 MiB refuses the 200 MiB block (200 >= 150 + 20), cannot get a new
  // segment (300 + 150 > 400), so step 4 frees just the oversize block.
  CachingAllocatorModel m(conf("max_split_size_mb:128"), 400 * MiB);
  BlockRef big = m.malloc(200 * MiB);
  BlockRef normal = m.malloc(100 * MiB);
  m.free(big);
  m.free(normal);
  EXPECT_NE(m.malloc(150 * MiB), nullptr);
  EXPECT_EQ(m.stats().num_alloc_retries, 0u);
  EXPECT_EQ(m.stats().reserved_bytes, 250 * MiB);
  EXPECT_EQ(m.largest_free_block(), 100 * MiB);
}

TEST(MaxSplitSize, OnMissFreesSeveralOversizeBlocksLargestFirst) {
  // Cached 200 + 150 (oversize) + 100 MiB under a 500 MiB cap; 300 MiB needs
  // both oversize blocks freed (200 < 300 <= 350), the normal one stays.
  CachingAllocatorModel m(conf("max_split_size_mb:128"), 500 * MiB);
  BlockRef a = m.malloc(200 * MiB);
  BlockRef b = m.malloc(150 * MiB);
  BlockRef c = m.malloc(100 * MiB);
  m.free(a);
  m.free(b);
  m.free(c);
  EXPECT_NE(m.malloc(300 * MiB), nullptr);
  EXPECT_EQ(m.stats().num_alloc_retries, 0u);
  EXPECT_EQ(m.stats().reserved_bytes, 400 * MiB);
  EXPECT_EQ(m.largest_free_block(), 100 * MiB);
}

TEST(MaxSplitSize, OversizeReleaseThatFallsShortFallsBackToWholeCache) {
  // 250 MiB: freeing the 200 MiB oversize block is not enough by itself
  // (200 < 250), so the whole cache is released and the alloc retried.
  CachingAllocatorModel m(conf("max_split_size_mb:128"), 400 * MiB);
  BlockRef big = m.malloc(200 * MiB);
  BlockRef normal = m.malloc(100 * MiB);
  m.free(big);
  m.free(normal);
  EXPECT_NE(m.malloc(250 * MiB), nullptr);
  EXPECT_EQ(m.stats().num_alloc_retries, 1u);
  EXPECT_EQ(m.stats().reserved_bytes, 250 * MiB);
}

TEST(Streams, PoolsAreNotSharedAcrossStreams) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  m.free(m.malloc(30 * MiB, /*stream=*/1));
  BlockRef other = m.malloc(30 * MiB, /*stream=*/2);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);
  EXPECT_EQ(CachingAllocatorModel::view(other).stream, 2);
  BlockRef same = m.malloc(30 * MiB, /*stream=*/1);
  EXPECT_EQ(m.stats().num_device_alloc, 2u);
  EXPECT_EQ(CachingAllocatorModel::view(same).stream, 1);
  // Small pool too.
  m.free(m.malloc(1000, 1));
  m.malloc(1000, 3);
  EXPECT_EQ(m.stats().num_device_alloc, 4u);
}

TEST(EmptyCache, ReleasesOnlyFullyFreeSegments) {
  CachingAllocatorModel m(AllocConfig{}, 80 * kGiB);
  BlockRef a = m.malloc(5 * MiB);  // 20 MiB segment, partly used after b is freed
  BlockRef b = m.malloc(5 * MiB);
  BlockRef c = m.malloc(40 * MiB);  // own segment, fully free after c is freed
  BlockRef s = m.malloc(4096);      // small segment, fully free after s is freed
  (void)a;
  m.free(b);
  m.free(c);
  m.free(s);
  EXPECT_EQ(m.stats().reserved_bytes, 62 * MiB);
  m.empty_cache();
  EXPECT_EQ(m.stats().reserved_bytes, 20 * MiB);
  EXPECT_EQ(m.stats().num_device_free, 2u);
  EXPECT_EQ(m.stats().segments, 1u);
  EXPECT_EQ(m.largest_free_block(), 15 * MiB);  // the split remainder stays cached
}

TEST(Oom, FreesCacheAndRetriesThenReportsOom) {
  CachingAllocatorModel m(AllocConfig{}, 100 * MiB);
  m.free(m.malloc(60 * MiB));
  // 60 cached + 80 new > 100: release the cache, retry, succeed.
  BlockRef a = m.malloc(80 * MiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(m.stats().num_alloc_retries, 1u);
  EXPECT_EQ(m.stats().reserved_bytes, 80 * MiB);
  EXPECT_EQ(m.stats().num_ooms, 0u);
  // Nothing left to free: OOM, state unchanged.
  EXPECT_EQ(m.malloc(30 * MiB), nullptr);
  EXPECT_EQ(m.stats().num_ooms, 1u);
  EXPECT_EQ(m.stats().num_alloc_retries, 2u);
  EXPECT_EQ(m.stats().reserved_bytes, 80 * MiB);
  EXPECT_EQ(m.stats().allocated_bytes, 80 * MiB);
}

TEST(Oom, MemoryFractionLowersTheCap) {
  CachingAllocatorModel m(conf("per_process_memory_fraction:0.5"), 100 * MiB);
  EXPECT_NE(m.malloc(50 * MiB), nullptr);
  EXPECT_EQ(m.malloc(2 * MiB), nullptr);  // needs a 20 MiB segment: 70 > 50
}

// GC: cap 200 MiB, fraction 0.5 -> 100 MiB allowed; threshold 0.5 -> GC
// starts once reserved exceeds 50 MiB. A (30 MiB) is freed before B (34 MiB)
// is allocated, so at the next miss A is older than the mean age and is freed
// while B stays cached.
TEST(GarbageCollection, FreesOldWholeSegmentsAboveThreshold) {
  auto run = [](const char* text) {
    auto m = std::make_unique<CachingAllocatorModel>(conf(text), 200 * MiB);
    m->free(m->malloc(30 * MiB));
    m->free(m->malloc(34 * MiB));
    EXPECT_NE(m->malloc(40 * MiB), nullptr);
    return m;
  };
  auto gc = run("garbage_collection_threshold:0.5,per_process_memory_fraction:0.5");
  EXPECT_EQ(gc->stats().num_gc_releases, 1u);
  EXPECT_EQ(gc->stats().reserved_bytes, 74 * MiB);
  EXPECT_EQ(gc->largest_free_block(), 34 * MiB);
  EXPECT_EQ(gc->stats().num_alloc_retries, 0u);

  // Same fraction without GC: 64 + 40 > 100, so the whole cache goes (retry).
  auto nogc = run("per_process_memory_fraction:0.5");
  EXPECT_EQ(nogc->stats().num_alloc_retries, 1u);
  EXPECT_EQ(nogc->stats().reserved_bytes, 40 * MiB);

  // GC needs a memory fraction: threshold alone does nothing.
  auto nofraction = run("garbage_collection_threshold:0.5");
  EXPECT_EQ(nofraction->stats().num_gc_releases, 0u);
  EXPECT_EQ(nofraction->stats().reserved_bytes, 104 * MiB);
}

TEST(GarbageCollection, NothingHappensBelowTheThreshold) {
  CachingAllocatorModel m(conf("garbage_collection_threshold:0.9,per_process_memory_fraction:1.0"), 200 * MiB);
  m.free(m.malloc(30 * MiB));
  m.free(m.malloc(34 * MiB));
  m.malloc(40 * MiB);  // reserved 64 <= 180: no GC
  EXPECT_EQ(m.stats().num_gc_releases, 0u);
  EXPECT_EQ(m.stats().reserved_bytes, 104 * MiB);
}

TEST(Expandable, GrowsOneRangeByPagesAndReusesTheFreedTail) {
  CachingAllocatorModel m(conf("expandable_segments:True"), 80 * kGiB);
  BlockRef a = m.malloc(30 * MiB);
  EXPECT_EQ(m.stats().reserved_bytes, 40 * MiB);  // two 20 MiB pages
  BlockRef b = m.malloc(30 * MiB);                // 10 MiB free + one more page
  EXPECT_EQ(m.stats().reserved_bytes, 60 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(b).addr, CachingAllocatorModel::view(a).addr + 30 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(b).segment_base, CachingAllocatorModel::view(a).segment_base);
  m.free(b);
  // Growth at the end: the freed 30 MiB plus one page makes room for 50 MiB.
  BlockRef c = m.malloc(50 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(c).addr, CachingAllocatorModel::view(b).addr);
  EXPECT_EQ(m.stats().reserved_bytes, 80 * MiB);
  EXPECT_EQ(m.stats().num_device_alloc, 3u);

  // The default allocator needs a third segment for the same sequence.
  CachingAllocatorModel d(AllocConfig{}, 80 * kGiB);
  d.malloc(30 * MiB);
  d.free(d.malloc(30 * MiB));
  d.malloc(50 * MiB);
  EXPECT_EQ(d.stats().reserved_bytes, 110 * MiB);
}

TEST(Expandable, SmallPoolUsesTwoMiBPagesAndFreeNeverUnmaps) {
  CachingAllocatorModel m(conf("expandable_segments:True"), 80 * kGiB);
  BlockRef a = m.malloc(600 * 1024);
  BlockRef b = m.malloc(600 * 1024);
  EXPECT_EQ(m.stats().reserved_bytes, 2 * MiB);
  BlockRef c = m.malloc(1 * MiB);  // 800 KiB free at the end + one more 2 MiB page
  EXPECT_EQ(m.stats().reserved_bytes, 4 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(c).addr, CachingAllocatorModel::view(b).addr + 600 * 1024);
  m.free(a);
  m.free(b);
  m.free(c);
  EXPECT_EQ(m.stats().reserved_bytes, 4 * MiB);
  EXPECT_EQ(m.stats().num_device_free, 0u);
}

TEST(Expandable, EmptyCacheUnmapsWholeFreePagesOnly) {
  CachingAllocatorModel m(conf("expandable_segments:True"), 80 * kGiB);
  BlockRef a = m.malloc(30 * MiB);
  BlockRef b = m.malloc(50 * MiB);
  (void)a;
  EXPECT_EQ(m.stats().reserved_bytes, 80 * MiB);
  m.free(b);
  m.empty_cache();
  // a covers [0, 30): the page [20, 40) is partly used, [40, 80) is unmapped.
  EXPECT_EQ(m.stats().reserved_bytes, 40 * MiB);
  EXPECT_EQ(m.largest_free_block(), 10 * MiB);
  // Regrowth maps pages again right after the kept ones.
  BlockRef c = m.malloc(50 * MiB);
  EXPECT_EQ(CachingAllocatorModel::view(c).addr, CachingAllocatorModel::view(a).addr + 30 * MiB);
  EXPECT_EQ(m.stats().reserved_bytes, 80 * MiB);
  m.free(c);
  m.free(a);
  m.empty_cache();
  EXPECT_EQ(m.stats().reserved_bytes, 0u);
  EXPECT_TRUE(m.blocks().empty());  // the virtual range was given back
}

TEST(Expandable, OomRetryAfterUnmappingCache) {
  // Cap 100 MiB: 60 MiB cached in one stream's range; stream 2 wants 60 MiB.
  CachingAllocatorModel m(conf("expandable_segments:True"), 100 * MiB);
  m.free(m.malloc(60 * MiB, 1));
  BlockRef x = m.malloc(60 * MiB, 2);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(m.stats().num_alloc_retries, 1u);
  EXPECT_EQ(m.stats().reserved_bytes, 60 * MiB);
}

TEST(Expandable, RequestAboveTheCapIsAnOomNotACrash) {
  CachingAllocatorModel m(conf("expandable_segments:True"), 100 * MiB);
  EXPECT_EQ(m.malloc(200 * MiB), nullptr);
  EXPECT_EQ(m.stats().num_ooms, 1u);
  EXPECT_NE(m.malloc(90 * MiB), nullptr);  // five 20 MiB pages: exactly the cap
  EXPECT_EQ(m.stats().reserved_bytes, 100 * MiB);
  EXPECT_EQ(m.malloc(512), nullptr);  // a small page no longer fits
  EXPECT_EQ(m.stats().num_ooms, 2u);
}

}  // namespace
}  // namespace gpupack
