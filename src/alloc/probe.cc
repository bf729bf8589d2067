#include "alloc/probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

namespace gpupack {

int max_search_steps(std::uint64_t free_bytes, std::uint64_t granularity_bytes) {
  const std::uint64_t g = std::max<std::uint64_t>(granularity_bytes, 1);
  const std::uint64_t units = free_bytes / g;  // candidate multiples 1..units
  // One try at `free` itself, then a binary search over units + 1 values.
  return 1 + static_cast<int>(std::bit_width(units));
}

LargestBlockResult find_largest_block(DeviceAllocator& allocator, std::uint64_t free_bytes,
                                      const ProbeOptions& options) {
  LargestBlockResult r;
  if (free_bytes == 0) {
    r.complete = true;
    return r;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t g = std::max<std::uint64_t>(options.granularity_bytes, 1);
  auto out_of_budget = [&] {
    return r.steps >= options.max_steps || std::chrono::steady_clock::now() - start >= options.time_budget;
  };
  auto fits = [&](std::uint64_t bytes) {
    ++r.steps;
    auto handle = allocator.try_alloc(bytes);
    if (!handle) return false;
    allocator.free(*handle);
    return true;
  };
  // Unfragmented memory: one try settles it.
  if (fits(free_bytes)) {
    r.largest_bytes = free_bytes;
    r.complete = true;
    return r;
  }
  // Invariant: lo x g fits (0 trivially), hi x g does not (hi x g >= free failed or is above free).
  std::uint64_t lo = 0;
  std::uint64_t hi = free_bytes / g + 1;
  if (free_bytes % g == 0) hi = free_bytes / g;  // free itself (= hi x g) just failed
  while (hi - lo > 1) {
    if (out_of_budget()) {
      r.largest_bytes = lo * g;
      return r;
    }
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (fits(mid * g)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  r.largest_bytes = lo * g;
  r.complete = true;
  return r;
}

GpuProbe probe_device(DeviceAllocator& allocator, int index, const std::string& name, const ProbeOptions& options) {
  GpuProbe p;
  p.index = index;
  p.name = name;
  const DeviceMemInfo info = allocator.mem_info();
  p.total_bytes = info.total_bytes;
  p.free_bytes = info.free_bytes;
  const LargestBlockResult r = find_largest_block(allocator, info.free_bytes, options);
  p.largest_free_block_bytes = r.largest_bytes;
  p.steps = r.steps;
  p.complete = r.complete;
  p.external_fragmentation =
      info.free_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(r.largest_bytes) / static_cast<double>(info.free_bytes);
  return p;
}

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

std::string prom_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string format_probe_table(const std::vector<GpuProbe>& gpus) {
  std::string out = fmt::format("{:>3}  {:<28} {:>12} {:>12} {:>14} {:>8} {:>6}\n", "gpu", "name", "total_MiB",
                                "free_MiB", "largest_MiB", "ext_frag", "steps");
  for (const GpuProbe& p : gpus) {
    out += fmt::format("{:>3}  {:<28} {:>12} {:>12} {:>14} {:>8.4f} {:>6}{}\n", p.index, p.name, mib(p.total_bytes),
                       mib(p.free_bytes), mib(p.largest_free_block_bytes), p.external_fragmentation, p.steps,
                       p.complete ? "" : "  (search cut short: largest is a lower bound)");
  }
  return out;
}

std::string format_probe_json(const std::vector<GpuProbe>& gpus) {
  nlohmann::json j = nlohmann::json::array();
  for (const GpuProbe& p : gpus) {
    j.push_back({{"gpu", p.index},
                 {"name", p.name},
                 {"total_bytes", p.total_bytes},
                 {"free_bytes", p.free_bytes},
                 {"largest_free_block_bytes", p.largest_free_block_bytes},
                 {"external_fragmentation", p.external_fragmentation},
                 {"search_steps", p.steps},
                 {"search_complete", p.complete}});
  }
  return nlohmann::json{{"gpus", j}}.dump(2) + "\n";
}

std::string format_probe_prom(const std::vector<GpuProbe>& gpus) {
  struct Metric {
    const char* name;
    const char* help;
    double (*value)(const GpuProbe&);
  };
  static const Metric metrics[] = {
      {"gpupack_gpu_memory_total_bytes", "Total device memory in bytes.",
       [](const GpuProbe& p) { return static_cast<double>(p.total_bytes); }},
      {"gpupack_gpu_memory_free_bytes", "Free device memory in bytes (cuMemGetInfo).",
       [](const GpuProbe& p) { return static_cast<double>(p.free_bytes); }},
      {"gpupack_gpu_largest_free_block_bytes", "Largest single device allocation that succeeded, in bytes.",
       [](const GpuProbe& p) { return static_cast<double>(p.largest_free_block_bytes); }},
      {"gpupack_gpu_external_fragmentation_ratio", "1 - largest free block / free memory.",
       [](const GpuProbe& p) { return p.external_fragmentation; }},
  };
  std::string out;
  for (const Metric& m : metrics) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", m.name, m.help, m.name);
    for (const GpuProbe& p : gpus) {
      out += fmt::format("{}{{gpu=\"{}\",name=\"{}\"}} {}\n", m.name, p.index, prom_escape(p.name), m.value(p));
    }
  }
  return out;
}

}  // namespace gpupack
