#include "sim/dynamic_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include "sim/dynamic_experiment.h"
#include "util/files.h"

namespace gpupack {
namespace {

double pct(int64_t part, int64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

nlohmann::json to_json(const WaitStats& w) {
  return {{"jobs", w.jobs}, {"mean_s", w.mean_s}, {"p50_s", w.p50_s}, {"p95_s", w.p95_s}, {"p99_s", w.p99_s}};
}

const char* const kSizeClasses[] = {"cpu", "shared", "1", "2-4", "5-8", "9-32", "33+"};

}  // namespace

std::string size_class(const DynamicJob& job) {
  int64_t milli = 0;
  for (const Request& r : job.members) milli += r.total_gpu_milli();
  if (milli == 0) return "cpu";
  if (milli < kGpuMilliPerGpu) return "shared";
  const int64_t g = (milli + kGpuMilliPerGpu - 1) / kGpuMilliPerGpu;
  if (g == 1) return "1";
  if (g <= 4) return "2-4";
  if (g <= 8) return "5-8";
  if (g <= 32) return "9-32";
  return "33+";
}

WaitStats wait_stats(std::vector<int64_t> v) {
  WaitStats w;
  w.jobs = static_cast<int>(v.size());
  if (v.empty()) return w;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    const size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return static_cast<double>(v[std::min(v.size(), std::max<size_t>(k, 1)) - 1]);
  };
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  w.mean_s = sum / static_cast<double>(v.size());
  w.p50_s = rank(0.50);
  w.p95_s = rank(0.95);
  w.p99_s = rank(0.99);
  return w;
}

DynamicSummary summarize_dynamic(const DynamicRunResult& run, const DynamicWorkload& workload,
                                 const std::string& label) {
  if (run.jobs.size() != workload.jobs.size()) throw std::invalid_argument("run and workload differ in job count");
  DynamicSummary s;
  s.label = label;
  s.jobs = static_cast<int>(run.jobs.size());
  s.never_ran = run.never_ran;
  s.backfilled = run.backfilled_jobs;
  s.preemptions = run.preemptions;
  s.evicted_pods = run.evicted_pods;
  s.defrag_runs = run.defrag_runs;
  s.defrag_moves = run.defrag_moves;
  s.mean_alloc_pct = run.mean_alloc_pct;
  s.makespan_s = run.end_s - run.start_s;
  s.wall_seconds = run.wall_seconds;
  double frag_area = 0, queue_area = 0;
  for (size_t i = 0; i < run.samples.size(); ++i) {
    const DynamicSample& x = run.samples[i];
    s.peak_alloc_pct = std::max(s.peak_alloc_pct, pct(x.used_milli, run.capacity_milli));
    s.max_queue_length = std::max(s.max_queue_length, x.queue_length);
    if (i + 1 < run.samples.size()) {
      const double dt = static_cast<double>(run.samples[i + 1].time_s - x.time_s);
      frag_area += x.frag_milli * dt;
      queue_area += x.queue_length * dt;
    }
  }
  const double span = static_cast<double>(s.makespan_s);
  if (span > 0) {
    s.mean_frag_pct = 100.0 * frag_area / (span * static_cast<double>(std::max<int64_t>(1, run.capacity_milli)));
    s.mean_queue_length = queue_area / span;
  }
  std::vector<int64_t> waits, gang_waits, jcts;
  std::vector<std::vector<int64_t>> by_class(std::size(kSizeClasses));
  for (size_t i = 0; i < run.jobs.size(); ++i) {
    const JobOutcome& o = run.jobs[i];
    const DynamicJob& d = workload.jobs[i];
    const bool gang = d.members.size() > 1;
    s.gangs += gang;
    const int64_t waited = (o.first_start_s >= 0 ? o.first_start_s : run.end_s) - o.submit_s;
    if (waited > s.longest_wait_s || s.longest_wait_job.empty()) {
      s.longest_wait_s = waited;
      s.longest_wait_job = d.name;
    }
    if (o.first_start_s < 0) continue;
    waits.push_back(waited);
    if (gang) gang_waits.push_back(waited);
    const std::string cls = size_class(d);
    for (size_t k = 0; k < std::size(kSizeClasses); ++k)
      if (cls == kSizeClasses[k]) by_class[k].push_back(waited);
    if (o.end_s >= 0) jcts.push_back(o.end_s - o.submit_s);
  }
  s.wait = wait_stats(waits);
  s.gang_wait = wait_stats(gang_waits);
  s.jct = wait_stats(jcts);
  for (size_t k = 0; k < std::size(kSizeClasses); ++k)
    if (!by_class[k].empty()) s.wait_by_size.emplace_back(kSizeClasses[k], wait_stats(by_class[k]));
  return s;
}

std::string format_dynamic_table(const std::vector<DynamicSummary>& rows) {
  std::string out = fmt::format("{:<24} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6} {:>6} {:>8}\n", "run",
                                "alloc%", "frag%", "wait p50", "wait p95", "wait p99", "gang p95", "JCT p50",
                                "max wait", "never", "bkfl", "wall s");
  for (const DynamicSummary& s : rows) {
    out += fmt::format(
        "{:<24} {:>7.2f} {:>7.2f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>10} {:>6} {:>6} {:>8.3f}\n", s.label,
        s.mean_alloc_pct, s.mean_frag_pct, s.wait.p50_s, s.wait.p95_s, s.wait.p99_s, s.gang_wait.p95_s, s.jct.p50_s,
        s.longest_wait_s, s.never_ran, s.backfilled, s.wall_seconds);
  }
  out += "alloc%/frag% are time-weighted means; waits, JCT and max wait in seconds.\n";
  return out;
}

void write_dynamic_series_csv(const std::string& path, const std::vector<DynamicRunResult>& runs,
                              const std::vector<std::string>& labels) {
  auto out = open_output(path);
  out << "time_s,run,alloc_pct,frag_pct,queue_length,pending_gpu_milli,running_jobs\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const DynamicSample& s : runs[r].samples) {
      out << fmt::format(
          "{},{},{:.4f},{:.4f},{},{},{}\n", s.time_s, labels.at(r), pct(s.used_milli, runs[r].capacity_milli),
          runs[r].capacity_milli ? 100.0 * s.frag_milli / static_cast<double>(runs[r].capacity_milli) : 0.0,
          s.queue_length, s.pending_milli, s.running_jobs);
    }
  }
  close_output(out, path);
}

void write_dynamic_placements_csv(const std::string& path, const std::vector<DynamicExperimentRun>& runs) {
  auto out = open_output(path);
  out << "run,job,pod,node,gpus,start_s\n";
  for (const DynamicExperimentRun& run : runs) {
    const DynamicRunResult& r = run.result;
    for (size_t j = 0; j < r.jobs.size(); ++j) {
      const JobOutcome& o = r.jobs[j];
      const std::vector<std::string>& names = run.member_names.at(j);
      for (size_t m = 0; m < names.size(); ++m) {
        std::string node, gpus, start;
        if (m < o.first_placement.size() && valid(o.first_placement[m].node)) {
          const Assignment& a = o.first_placement[m];
          node = r.node_names.at(index(a.node));
          for (int g = 0; g < 32; ++g)
            if ((a.gpu_mask >> g) & 1u) gpus += (gpus.empty() ? "" : "|") + std::to_string(g);
          start = std::to_string(o.first_start_s);
        }
        out << fmt::format("{},{},{},{},{},{}\n", run.label, j, names[m], node, gpus, start);
      }
    }
  }
  close_output(out, path);
}

void write_dynamic_summary_json(const std::string& path, const std::vector<DynamicSummary>& rows,
                                const std::string& cluster_label, const std::string& workload_label) {
  nlohmann::json j;
  j["cluster"] = cluster_label;
  j["workload"] = workload_label;
  auto& jr = j["runs"] = nlohmann::json::array();
  for (const DynamicSummary& s : rows) {
    nlohmann::json by_size = nlohmann::json::object();
    for (const auto& [cls, w] : s.wait_by_size) by_size[cls] = to_json(w);
    jr.push_back({{"run", s.label},
                  {"jobs", s.jobs},
                  {"gangs", s.gangs},
                  {"never_ran", s.never_ran},
                  {"backfilled_jobs", s.backfilled},
                  {"preemptions", s.preemptions},
                  {"evicted_pods", s.evicted_pods},
                  {"defrag_runs", s.defrag_runs},
                  {"defrag_moves", s.defrag_moves},
                  {"mean_alloc_pct", s.mean_alloc_pct},
                  {"peak_alloc_pct", s.peak_alloc_pct},
                  {"mean_frag_pct", s.mean_frag_pct},
                  {"mean_queue_length", s.mean_queue_length},
                  {"max_queue_length", s.max_queue_length},
                  {"wait", to_json(s.wait)},
                  {"wait_by_size", by_size},
                  {"gang_wait", to_json(s.gang_wait)},
                  {"jct", to_json(s.jct)},
                  {"longest_wait_s", s.longest_wait_s},
                  {"longest_wait_job", s.longest_wait_job},
                  {"makespan_s", s.makespan_s},
                  {"wall_seconds", s.wall_seconds}});
  }
  auto out = open_output(path);
  out << j.dump(2) << "\n";
  close_output(out, path);
}

void write_dynamic_svg(const std::string& path, const std::vector<DynamicRunResult>& runs,
                       const std::vector<std::string>& labels, const std::string& title) {
  constexpr double kLeft = 70, kTop = 50, kWidth = 640, kPanel = 220, kGap = 60;
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  int max_queue = 1;
  for (const auto& r : runs)
    for (const auto& s : r.samples) {
      t0 = std::min(t0, s.time_s);
      t1 = std::max(t1, s.time_s);
      max_queue = std::max(max_queue, s.queue_length);
    }
  if (t0 >= t1) t1 = t0 + 1;
  auto x = [&](int64_t t) { return kLeft + static_cast<double>(t - t0) / static_cast<double>(t1 - t0) * kWidth; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
      kLeft + kWidth + 200, kTop + 2 * kPanel + kGap + 50, kLeft + kWidth / 2, title);
  struct Panel {
    double top, max;
    const char* label;
  };
  const Panel panels[] = {{kTop, 100.0, "GPU allocation (%)"},
                          {kTop + kPanel + kGap, static_cast<double>(max_queue), "queue length (jobs)"}};
  for (int p = 0; p < 2; ++p) {
    const Panel& pn = panels[p];
    for (int g = 0; g <= 4; ++g) {
      const double v = pn.max * g / 4.0, yy = pn.top + (1.0 - g / 4.0) * kPanel;
      svg += fmt::format(
          "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
          "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.0f}</text>\n",
          kLeft, yy, kLeft + kWidth, kLeft - 6, yy + 4, v);
    }
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
        "<text transform=\"translate(22,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
        kLeft, pn.top, kWidth, kPanel, pn.top + kPanel / 2, pn.label);
    for (size_t r = 0; r < runs.size(); ++r) {
      const auto& samples = runs[r].samples;
      const size_t step = std::max<size_t>(1, samples.size() / 1500);
      std::string points;
      for (size_t i = 0; i < samples.size(); i += step) {
        const double v =
            p == 0 ? pct(samples[i].used_milli, runs[r].capacity_milli) : static_cast<double>(samples[i].queue_length);
        points += fmt::format("{:.1f},{:.1f} ", x(samples[i].time_s), pn.top + (1.0 - v / pn.max) * kPanel);
      }
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                         kColors[r % std::size(kColors)], points);
    }
  }
  // Time ticks from the first event: the smallest round step that gives at
  // most 8 of them, labelled in minutes, hours or days.
  constexpr int64_t kSteps[] = {1,     5,         10,        30,         60,         300,
                                600,   1800,      3600,      3 * 3600,   21600,      43200,
                                86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 90 * 86400};
  int64_t step = kSteps[std::size(kSteps) - 1];
  for (int64_t st : kSteps)
    if ((t1 - t0) / st <= 8) {
      step = st;
      break;
    }
  auto tick_label = [&](int64_t dt) {
    if (step >= 86400) return fmt::format("{}d", dt / 86400);
    if (step >= 3600) return fmt::format("{}h", dt / 3600);
    if (step >= 60) return fmt::format("{}m", dt / 60);
    return fmt::format("{}s", dt);
  };
  for (int64_t dt = 0; t0 + dt <= t1; dt += step) {
    for (const Panel& pn : panels) {
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
          "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
          x(t0 + dt), pn.top, pn.top + kPanel, pn.top + kPanel + 15, tick_label(dt));
    }
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time since the first event (t = {} s to {} s)</text>\n",
      kLeft + kWidth / 2, kTop + 2 * kPanel + kGap + 34, t0, t1);
  for (size_t r = 0; r < runs.size(); ++r) {
    const double ly = kTop + 10 + 20.0 * static_cast<double>(r);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5:.1f}\">{6} ({7:.2f}%)</text>\n",
        kLeft + kWidth + 15, ly, kLeft + kWidth + 40, kColors[r % std::size(kColors)], kLeft + kWidth + 46, ly + 4,
        labels.at(r), runs[r].mean_alloc_pct);
  }
  svg += "</svg>\n";
  auto out = open_output(path);
  out << svg;
  close_output(out, path);
}

}  // namespace gpupack
