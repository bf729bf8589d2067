// Deterministic random helpers shared by the simulators.
//
// Contract: results depend only on the seed and the inputs (the same on every
// platform and standard library): mt19937_64 output with our own unbiased
// bounded draw and Fisher-Yates shuffle, not std::uniform_int_distribution
// or std::shuffle, whose algorithms are implementation-defined.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace gpupack {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, bound), bound > 0 (Lemire's method with rejection).
  uint64_t below(uint64_t bound);
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  uint64_t next() { return engine_(); }

  template <typename T>
  void shuffle(std::span<T> items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

// A seeded permutation of 0..n-1, used as a node tie-break rank.
std::vector<int64_t> seeded_rank(size_t n, uint64_t seed);

}  // namespace gpupack
