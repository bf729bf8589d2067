// The process heap as the C library sees it, for long-running servers.
//
// Contract:
// - heap_stats() reads the allocator's own counters (glibc mallinfo2, summed
//   over every arena): bytes in use by the program and bytes the allocator
//   holds free. `known` is false where the C library gives no such figures
//   or does not own the heap (sanitizer builds); then both are 0 and the
//   two functions below do nothing. Cheap: it walks the arenas, not the heap.
// - limit_heap_arenas(n) caps glibc's per-thread arenas at n (default there:
//   8 per core, each keeping its own free memory); the environment's
//   MALLOC_ARENA_MAX, when set, wins. No-op elsewhere.
// - release_free_heap() returns free heap pages to the system (glibc
//   malloc_trim(0), every arena, free pages inside the heap too) and says how
//   many bytes the resident set shrank by (0 where unsupported). It takes the
//   arenas' locks one at a time: call it from a background thread, not on a
//   request's path.
#pragma once

#include <cstdint>

namespace gpupack {

struct HeapStats {
  bool known = false;
  uint64_t in_use_bytes = 0;  // allocated and not yet freed by the program
  uint64_t free_bytes = 0;    // held by the allocator, free for reuse
};

HeapStats heap_stats();
void limit_heap_arenas(int n);
int64_t release_free_heap();

}  // namespace gpupack
