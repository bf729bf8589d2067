#include "alloc/allocsim.h"

#include "util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "alloc/caching_allocator.h"

namespace gpupack {
namespace {

double frag(std::uint64_t reserved, std::uint64_t allocated) {
  return reserved == 0 ? 0.0 : static_cast<double>(reserved - allocated) / static_cast<double>(reserved);
}

std::string label(const std::string& config) { return config.empty() ? "default" : config; }

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.3f}", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

}  // namespace

ReplayResult replay(const Trace& trace, const AllocConfig& config, const ReplayOptions& options) {
  CachingAllocatorModel model(config, options.device_total_bytes);
  std::vector<BlockRef> live(trace.slots, nullptr);
  ReplayResult result;
  ReplaySummary& s = result.summary;
  s.config = config.text;
  s.events = trace.events.size();
  const std::uint64_t n = trace.events.size();
  const std::uint64_t every = options.sample_every > 0 ? options.sample_every : std::max<std::uint64_t>(1, n / 2000);
  result.series.reserve(n / every + 2);
  long double sum_gap = 0;
  long double sum_reserved = 0;
  const AllocStats& st = model.stats();

  auto sample = [&](std::uint64_t i) {
    SeriesPoint p;
    p.event = i;
    p.time_us = trace.events[i].time_us;
    p.allocated_bytes = st.allocated_bytes;
    p.reserved_bytes = st.reserved_bytes;
    p.fragmentation = frag(st.reserved_bytes, st.allocated_bytes);
    p.largest_free_block_bytes = model.largest_free_block();
    p.device_allocs = st.num_device_alloc;
    p.ooms = st.num_ooms;
    result.series.push_back(p);
  };

  for (std::uint64_t i = 0; i < n; ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAlloc) {
      BlockRef b = model.malloc(e.size_bytes, e.stream);
      live[e.slot] = b;
      if (b == nullptr && !s.first_oom) {
        s.first_oom =
            OomInfo{i, e.time_us, round_request_size(e.size_bytes, config), st.reserved_bytes, st.allocated_bytes};
      }
    } else {
      BlockRef b = live[e.slot];
      if (b != nullptr) model.free(b);
      live[e.slot] = nullptr;
    }
    if (st.reserved_bytes > s.peak_reserved_bytes) {
      s.peak_reserved_bytes = st.reserved_bytes;
      s.fragmentation_at_peak = frag(st.reserved_bytes, st.allocated_bytes);
    }
    sum_gap += static_cast<long double>(st.reserved_bytes - st.allocated_bytes);
    sum_reserved += static_cast<long double>(st.reserved_bytes);
    if (i % every == 0 || i + 1 == n) sample(i);
  }
  s.peak_allocated_bytes = st.peak_allocated_bytes;
  s.mean_fragmentation = sum_reserved > 0 ? static_cast<double>(sum_gap / sum_reserved) : 0.0;
  s.final_reserved_bytes = st.reserved_bytes;
  s.final_largest_free_block_bytes = model.largest_free_block();
  s.device_allocs = st.num_device_alloc;
  s.device_frees = st.num_device_free;
  s.alloc_retries = st.num_alloc_retries;
  s.ooms = st.num_ooms;
  return result;
}

std::size_t recommend(const std::vector<ReplayResult>& results, std::string* reason) {
  if (results.empty()) throw std::invalid_argument("recommend: no results");
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& s = results[i].summary;
    if (s.ooms > 0) continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = results[*best].summary;
    if (s.peak_reserved_bytes < b.peak_reserved_bytes ||
        (s.peak_reserved_bytes == b.peak_reserved_bytes && s.device_allocs < b.device_allocs)) {
      best = i;
    }
  }
  if (best) {
    if (reason != nullptr) {
      const auto& b = results[*best].summary;
      const auto& base = results[0].summary;
      std::string vs;
      if (*best != 0) {
        const double saved =
            base.peak_reserved_bytes == 0
                ? 0.0
                : 100.0 * (static_cast<double>(base.peak_reserved_bytes) - static_cast<double>(b.peak_reserved_bytes)) /
                      static_cast<double>(base.peak_reserved_bytes);
        vs = fmt::format(", {:.1f}% below '{}'", saved, label(base.config));
      }
      *reason = fmt::format(
          "'{}' has the lowest peak reserved memory ({} GiB{}) among the configurations that did not run out of "
          "memory, with {:.1f}% of reserved memory unused on average and {} device allocations",
          label(b.config), gib(b.peak_reserved_bytes), vs, 100.0 * b.mean_fragmentation, b.device_allocs);
    }
    return *best;
  }
  std::size_t latest = 0;
  for (std::size_t i = 1; i < results.size(); ++i) {
    if (results[i].summary.first_oom->event > results[latest].summary.first_oom->event) latest = i;
  }
  if (reason != nullptr) {
    *reason = fmt::format(
        "every configuration ran out of memory under the cap; '{}' got furthest (first OOM at event {}), so the "
        "workload needs more memory or a smaller footprint",
        label(results[latest].summary.config), results[latest].summary.first_oom->event);
  }
  return latest;
}

std::vector<std::string> default_comparison_configs() {
  return {"", "expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4",
          "garbage_collection_threshold:0.8,per_process_memory_fraction:1.0"};
}

std::string format_comparison_table(const std::vector<ReplayResult>& results) {
  std::size_t width = 7;
  for (const auto& r : results) width = std::max(width, label(r.summary.config).size());
  std::string out =
      fmt::format("{:<{}}  {:>10} {:>10} {:>8} {:>8} {:>10} {:>9} {:>8} {:>6}  {}\n", "config", width, "peak_alloc",
                  "peak_resv", "frag@pk", "frag_avg", "largest", "dev_alloc", "retries", "ooms", "first_oom_event");
  for (const auto& r : results) {
    const auto& s = r.summary;
    out += fmt::format("{:<{}}  {:>10} {:>10} {:>8.3f} {:>8.3f} {:>10} {:>9} {:>8} {:>6}  {}\n", label(s.config), width,
                       gib(s.peak_allocated_bytes), gib(s.peak_reserved_bytes), s.fragmentation_at_peak,
                       s.mean_fragmentation, gib(s.final_largest_free_block_bytes), s.device_allocs, s.alloc_retries,
                       s.ooms, s.first_oom ? std::to_string(s.first_oom->event) : "-");
  }
  out += "(sizes in GiB; frag = (reserved - allocated) / reserved; largest = largest free cached block at the end)\n";
  return out;
}

namespace {

nlohmann::json summary_json(const ReplaySummary& s) {
  nlohmann::json j = {{"config", s.config},
                      {"events", s.events},
                      {"peak_allocated_bytes", s.peak_allocated_bytes},
                      {"peak_reserved_bytes", s.peak_reserved_bytes},
                      {"fragmentation_at_peak", s.fragmentation_at_peak},
                      {"mean_fragmentation", s.mean_fragmentation},
                      {"final_reserved_bytes", s.final_reserved_bytes},
                      {"final_largest_free_block_bytes", s.final_largest_free_block_bytes},
                      {"device_allocs", s.device_allocs},
                      {"device_frees", s.device_frees},
                      {"alloc_retries", s.alloc_retries},
                      {"ooms", s.ooms},
                      {"first_oom", nullptr}};
  if (s.first_oom) {
    j["first_oom"] = {{"event", s.first_oom->event},
                      {"time_us", s.first_oom->time_us},
                      {"request_bytes", s.first_oom->request_bytes},
                      {"reserved_bytes", s.first_oom->reserved_bytes},
                      {"allocated_bytes", s.first_oom->allocated_bytes}};
  }
  return j;
}

}  // namespace

std::string format_comparison_json(const std::vector<ReplayResult>& results) {
  nlohmann::json j;
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) j["results"].push_back(summary_json(r.summary));
  std::string reason;
  const std::size_t best = recommend(results, &reason);
  j["recommendation"] = {{"index", best}, {"config", results[best].summary.config}, {"reason", reason}};
  return j.dump(2) + "\n";
}

void write_replay_outputs(const std::vector<ReplayResult>& results, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create output directory: {}", dir, ec.message()));
  const std::string series_path = (std::filesystem::path(dir) / "series.csv").string();
  std::ofstream series(series_path);
  if (!series) throw std::runtime_error(fmt::format("{}: cannot open for writing", series_path));
  series << "config_index,config,event,time_us,allocated_bytes,reserved_bytes,fragmentation,"
            "largest_free_block_bytes,device_allocs,ooms\n";
  for (std::size_t c = 0; c < results.size(); ++c) {
    const std::string name = label(results[c].summary.config);
    for (const SeriesPoint& p : results[c].series) {
      series << fmt::format("{},\"{}\",{},{},{},{},{:.6f},{},{},{}\n", c, name, p.event, p.time_us, p.allocated_bytes,
                            p.reserved_bytes, p.fragmentation, p.largest_free_block_bytes, p.device_allocs, p.ooms);
    }
  }
  if (!series) throw std::runtime_error(fmt::format("{}: write failed", series_path));
  const std::string summary_path = (std::filesystem::path(dir) / "summary.json").string();
  std::ofstream summary(summary_path);
  if (!summary) throw std::runtime_error(fmt::format("{}: cannot open for writing", summary_path));
  summary << format_comparison_json(results);
  if (!summary) throw std::runtime_error(fmt::format("{}: write failed", summary_path));
  const std::string chart_path = (std::filesystem::path(dir) / "memory.svg").string();
  std::ofstream chart(chart_path);
  if (!chart) throw std::runtime_error(fmt::format("{}: cannot open for writing", chart_path));
  chart << replay_svg(results);
  if (!chart) throw std::runtime_error(fmt::format("{}: write failed", chart_path));
}

std::string replay_svg(const std::vector<ReplayResult>& results) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  constexpr double kLeft = 80, kTop = 50, kWidth = 640, kHeight = 320, kLegend = kLeft + kWidth + 20;
  std::uint64_t last_event = 1, peak = 1;
  for (const ReplayResult& r : results)
    for (const SeriesPoint& p : r.series) {
      last_event = std::max(last_event, p.event);
      peak = std::max({peak, p.reserved_bytes, p.allocated_bytes});
    }
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double top_gib = std::max(0.001, static_cast<double>(peak) / kGiB * 1.05);
  auto x = [&](std::uint64_t e) { return kLeft + static_cast<double>(e) / static_cast<double>(last_event) * kWidth; };
  auto y = [&](std::uint64_t bytes) { return kTop + (1.0 - static_cast<double>(bytes) / kGiB / top_gib) * kHeight; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">Reserved (solid) and allocated (dashed) GPU "
      "memory per configuration</text>\n"
      "<text transform=\"translate(20,{}) rotate(-90)\" text-anchor=\"middle\">GiB</text>\n",
      kLegend + 460, kTop + kHeight + 60, (kLegend + 460) / 2, kTop + kHeight / 2);
  for (int g = 0; g <= 4; ++g) {
    const double v = top_gib * g / 4.0, yy = kTop + (1.0 - g / 4.0) * kHeight;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.2f}</text>\n",
        kLeft, yy, kLeft + kWidth, kLeft - 6, yy + 4, v);
  }
  for (int g = 0; g <= 4; ++g) {
    const std::uint64_t e = last_event * static_cast<std::uint64_t>(g) / 4;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(e), kTop + kHeight + 16, e);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">event</text>\n",
      kLeft, kTop, kWidth, kHeight, kLeft + kWidth / 2, kTop + kHeight + 36);
  for (std::size_t c = 0; c < results.size(); ++c) {
    std::string reserved, allocated;
    for (const SeriesPoint& p : results[c].series) {
      reserved += fmt::format("{:.1f},{:.1f} ", x(p.event), y(p.reserved_bytes));
      allocated += fmt::format("{:.1f},{:.1f} ", x(p.event), y(p.allocated_bytes));
    }
    const char* color = kColors[c % std::size(kColors)];
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color, reserved);
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1\" stroke-dasharray=\"4 3\" points=\"{}\"/>\n", color,
        allocated);
    const double ly = kTop + 10 + 20.0 * static_cast<double>(c);
    const std::string name = html_escape(label(results[c].summary.config));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5:.1f}\">{6} (peak {7:.2f} GiB)</text>\n",
        kLegend, ly, kLegend + 25, color, kLegend + 31, ly + 4, name,
        static_cast<double>(results[c].summary.peak_reserved_bytes) / kGiB);
  }
  return svg + "</svg>\n";
}

}  // namespace gpupack
