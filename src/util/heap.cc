#include "util/heap.h"

#include <unistd.h>

#include <cstdlib>  // first: defines __GLIBC__ where glibc is the C library
#include <fstream>
#include <string>

// Under a sanitizer the allocator is the sanitizer's: glibc's counters and
// trimming say nothing about it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPUPACK_GLIBC_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPUPACK_GLIBC_HEAP 0
#endif
#endif
#if !defined(GPUPACK_GLIBC_HEAP) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define GPUPACK_GLIBC_HEAP 1
#endif
#if !defined(GPUPACK_GLIBC_HEAP)
#define GPUPACK_GLIBC_HEAP 0
#endif
#if GPUPACK_GLIBC_HEAP
#include <malloc.h>
#endif

namespace gpupack {
namespace {

[[maybe_unused]] int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(f >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

HeapStats heap_stats() {
  HeapStats s;
#if GPUPACK_GLIBC_HEAP
  const struct mallinfo2 m = ::mallinfo2();
  s.known = true;
  // uordblks: in use from the arenas; hblkhd: in use as separate mappings.
  s.in_use_bytes = m.uordblks + m.hblkhd;
  s.free_bytes = m.fordblks;
#endif
  return s;
}

void limit_heap_arenas(int n) {
#if GPUPACK_GLIBC_HEAP
  if (n > 0 && std::getenv("MALLOC_ARENA_MAX") == nullptr) ::mallopt(M_ARENA_MAX, n);
#else
  (void)n;
#endif
}

int64_t release_free_heap() {
#if GPUPACK_GLIBC_HEAP
  const int64_t before = resident_bytes();
  ::malloc_trim(0);
  const int64_t after = resident_bytes();
  return before > after ? before - after : 0;
#else
  return 0;
#endif
}

}  // namespace gpupack
