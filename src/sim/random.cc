#include "sim/random.h"

#include <numeric>

namespace gpupack {

uint64_t Rng::below(uint64_t bound) {
  // Multiply-shift with rejection of the biased low region.
  unsigned __int128 m = static_cast<unsigned __int128>(engine_()) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(engine_()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

std::vector<int64_t> seeded_rank(size_t n, uint64_t seed) {
  std::vector<int64_t> rank(n);
  std::iota(rank.begin(), rank.end(), 0);
  Rng rng(seed ^ 0x9e3779b97f4a7c15ULL);
  rng.shuffle(std::span<int64_t>(rank));
  return rank;
}

}  // namespace gpupack
