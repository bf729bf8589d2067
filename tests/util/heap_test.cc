#include "util/heap.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace gpupack {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// 64 MiB in 4 KiB blocks: below glibc's mmap threshold, so from the arenas.
std::vector<std::unique_ptr<char[]>> allocate_64_mib() {
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 16384; ++i) {
    blocks.emplace_back(new char[4096]);
    blocks.back()[0] = static_cast<char>(i);
  }
  return blocks;
}

TEST(Heap, CountersFollowWhatTheProgramHolds) {
  const HeapStats before = heap_stats();
  // glibc owns the heap in a normal build; a sanitizer replaces it.
  ASSERT_EQ(before.known, !kSanitized);
  if (!before.known) {
    EXPECT_EQ(before.in_use_bytes, 0U);
    EXPECT_EQ(release_free_heap(), 0);
    return;
  }
  auto blocks = allocate_64_mib();
  const HeapStats held = heap_stats();
  EXPECT_GE(held.in_use_bytes, before.in_use_bytes + (60U << 20));
  blocks.clear();
  const HeapStats freed = heap_stats();
  EXPECT_LE(freed.in_use_bytes, held.in_use_bytes - (60U << 20));
}

TEST(Heap, ReleaseGivesFreedPagesBackToTheSystem) {
  if (!heap_stats().known) GTEST_SKIP() << "sanitizer build: the heap is the sanitizer's (checked above)";
  auto keep = allocate_64_mib();
  auto pinned = std::make_unique<char[]>(4096);  // above the blocks: the heap top cannot shrink by itself
  pinned[0] = 1;
  // Free every block but one in 16: free memory inside the heap, not at its top.
  for (size_t i = 0; i < keep.size(); ++i)
    if (i % 16 != 0) keep[i].reset();
  const HeapStats before = heap_stats();
  EXPECT_GE(before.free_bytes, 50U << 20);
  EXPECT_GT(release_free_heap(), 16 << 20);
}

}  // namespace
}  // namespace gpupack
