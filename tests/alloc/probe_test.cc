#include "alloc/probe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "alloc/cuda_driver.h"

namespace gpupack {
namespace {

constexpr std::uint64_t MiB = 1024ull * 1024ull;

// Device memory with planted free holes: an allocation fits iff some hole is
// at least that large. Checks the search's promises as it goes.
class HoleyAllocator final : public DeviceAllocator {
 public:
  HoleyAllocator(std::vector<std::uint64_t> holes, std::uint64_t total) : holes_(std::move(holes)), total_(total) {
    for (auto h : holes_) free_ += h;
  }
  std::optional<Handle> try_alloc(std::uint64_t bytes) override {
    ++calls;
    EXPECT_LE(bytes, free_) << "asked for more than the free memory";
    EXPECT_GT(bytes, 0u);
    EXPECT_EQ(outstanding, 0) << "more than one block held at a time";
    for (auto h : holes_) {
      if (h >= bytes) {
        ++outstanding;
        return Handle{next_++};
      }
    }
    return std::nullopt;
  }
  void free(Handle) override { --outstanding; }
  DeviceMemInfo mem_info() override { return {free_, total_}; }

  int calls = 0;
  int outstanding = 0;

 private:
  std::vector<std::uint64_t> holes_;
  std::uint64_t total_;
  std::uint64_t free_ = 0;
  Handle next_ = 1;
};

TEST(Probe, FindsPlantedLargestHoleExactlyInBoundedSteps) {
  HoleyAllocator a({3 * MiB, 100 * MiB + 12345, 7 * MiB + 1}, 1024 * MiB);
  ProbeOptions exact;
  exact.granularity_bytes = 1;
  const std::uint64_t free = a.mem_info().free_bytes;
  auto r = find_largest_block(a, free, exact);
  EXPECT_EQ(r.largest_bytes, 100 * MiB + 12345);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.steps, a.calls);
  EXPECT_LE(r.steps, max_search_steps(free, 1));
  EXPECT_LE(max_search_steps(free, 1), 1 + 27);  // free < 2^27 bytes
  EXPECT_EQ(a.outstanding, 0);
}

TEST(Probe, GranularityGivesTheLargestFittingMultiple) {
  HoleyAllocator a({3 * MiB, 100 * MiB + 12345, 7 * MiB + 1}, 1024 * MiB);
  ProbeOptions opt;  // 2 MiB
  const std::uint64_t free = a.mem_info().free_bytes;
  auto r = find_largest_block(a, free, opt);
  EXPECT_EQ(r.largest_bytes, 100 * MiB);
  EXPECT_LE(r.steps, max_search_steps(free, 2 * MiB));
  EXPECT_LE(r.steps, 1 + 6);  // 55 multiples of 2 MiB: 6 halvings
}

TEST(Probe, RandomHolesAlwaysExactAndWithinBound) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::uint64_t> holes(1 + rng() % 8);
    std::uint64_t largest = 0;
    for (auto& h : holes) {
      h = 1 + rng() % (80ull * 1024 * MiB);
      largest = std::max(largest, h);
    }
    HoleyAllocator a(holes, 200ull * 1024 * MiB);
    ProbeOptions exact;
    exact.granularity_bytes = 1;
    const std::uint64_t free = a.mem_info().free_bytes;
    auto r = find_largest_block(a, free, exact);
    ASSERT_EQ(r.largest_bytes, largest) << "trial " << trial;
    ASSERT_LE(r.steps, max_search_steps(free, 1)) << "trial " << trial;
    ASSERT_LE(r.steps, 1 + 40);  // free < 2^40 bytes
    ProbeOptions coarse;
    HoleyAllocator b(holes, 200ull * 1024 * MiB);
    auto c = find_largest_block(b, free, coarse);
    const std::uint64_t expect = holes.size() == 1 ? largest : largest / (2 * MiB) * (2 * MiB);
    ASSERT_EQ(c.largest_bytes, expect) << "trial " << trial;
  }
}

TEST(Probe, OneHoleIsSettledInOneStepWithNoFragmentation) {
  HoleyAllocator a({5000 * MiB}, 8000 * MiB);
  GpuProbe p = probe_device(a, 0, "fake", ProbeOptions{});
  EXPECT_EQ(p.steps, 1);
  EXPECT_EQ(p.largest_free_block_bytes, 5000 * MiB);
  EXPECT_DOUBLE_EQ(p.external_fragmentation, 0.0);
}

TEST(Probe, FragmentationIsOneMinusLargestOverFree) {
  HoleyAllocator a({300 * MiB, 100 * MiB}, 1000 * MiB);
  GpuProbe p = probe_device(a, 2, "fake", ProbeOptions{});
  EXPECT_EQ(p.free_bytes, 400 * MiB);
  EXPECT_EQ(p.largest_free_block_bytes, 300 * MiB);
  EXPECT_DOUBLE_EQ(p.external_fragmentation, 0.25);
}

TEST(Probe, StepBoundCutsTheSearchShortWithALowerBound) {
  HoleyAllocator a({3 * MiB, 100 * MiB + 12345}, 1024 * MiB);
  ProbeOptions opt;
  opt.granularity_bytes = 1;
  opt.max_steps = 4;
  auto r = find_largest_block(a, a.mem_info().free_bytes, opt);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.steps, 4);
  EXPECT_LE(r.largest_bytes, 100 * MiB + 12345);
  // The reported size really fits.
  EXPECT_TRUE(r.largest_bytes == 0 || a.try_alloc(r.largest_bytes).has_value());
}

TEST(Probe, NoFreeMemoryNeedsNoSteps) {
  HoleyAllocator a({}, 1000 * MiB);
  GpuProbe p = probe_device(a, 0, "fake", ProbeOptions{});
  EXPECT_EQ(p.steps, 0);
  EXPECT_EQ(p.largest_free_block_bytes, 0u);
  EXPECT_DOUBLE_EQ(p.external_fragmentation, 0.0);
}

TEST(Probe, PrometheusTextfileFormat) {
  GpuProbe p{1, "NVIDIA \"X\"", 1000, 400, 300, 0.25, 5, true};
  const std::string text = format_probe_prom({p});
  for (const char* name : {"gpupack_gpu_memory_total_bytes", "gpupack_gpu_memory_free_bytes",
                           "gpupack_gpu_largest_free_block_bytes", "gpupack_gpu_external_fragmentation_ratio"}) {
    EXPECT_NE(text.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " gauge\n"), std::string::npos) << name;
  }
  EXPECT_NE(text.find("gpupack_gpu_memory_total_bytes{gpu=\"1\",name=\"NVIDIA \\\"X\\\"\"} 1000\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpupack_gpu_external_fragmentation_ratio{gpu=\"1\",name=\"NVIDIA \\\"X\\\"\"} 0.25\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(Probe, MissingDriverLibraryIsReportedAsNoDriver) {
  ProbeRun run = probe_all_gpus("/nonexistent/libcuda.so.1", ProbeOptions{});
  EXPECT_EQ(run.exit_code, kProbeExitNoDriver);
  EXPECT_NE(run.message.find("no CUDA driver"), std::string::npos);
  EXPECT_TRUE(run.gpus.empty());
}

}  // namespace
}  // namespace gpupack
