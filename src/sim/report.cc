#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include "util/files.h"

namespace gpupack {
namespace {

// The policy column: 14 wide, or the longest name ("poolfrag+learned").
size_t name_width(const std::vector<PolicySummary>& summary) {
  size_t w = 14;
  for (const PolicySummary& s : summary) w = std::max(w, s.policy.size());
  return w;
}

double at(const std::vector<double>& v, int k) { return k < static_cast<int>(v.size()) ? v[k] : NAN; }

}  // namespace

std::vector<PolicySummary> summarize(const std::vector<StaticRunResult>& runs) {
  std::vector<PolicySummary> out;
  std::map<std::string, size_t> slot;
  std::vector<std::vector<Curve>> curves;
  std::vector<int> with_waste;  // runs with size_waste_milli, per policy
  for (const StaticRunResult& r : runs) {
    auto [it, inserted] = slot.emplace(r.policy, out.size());
    if (inserted) {
      out.emplace_back();
      out.back().policy = r.policy;
      curves.emplace_back();
      with_waste.push_back(0);
    }
    PolicySummary& s = out[it->second];
    if (r.size_waste_milli && r.capacity_milli > 0) {
      s.mean_size_waste_pct =
          s.mean_size_waste_pct.value_or(0.0) + 100.0 * *r.size_waste_milli / static_cast<double>(r.capacity_milli);
      ++with_waste[it->second];
    }
    ++s.seeds;
    s.mean_failed_pods += r.failed_pods;
    s.mean_arrivals += static_cast<double>(r.steps.size());
    s.mean_wall_seconds += r.wall_seconds;
    s.mean_final_alloc_pct += r.final_alloc_pct();
    curves[it->second].push_back(bucket_curve(r));
    if (r.defrag) {
      s.has_defrag = true;
      s.mean_alloc_pct_before_defrag += r.defrag->alloc_pct_before;
      s.mean_alloc_pct_after_defrag += r.defrag->alloc_pct_after;
      s.mean_moves += r.defrag->moves;
      s.mean_running_pods += r.defrag->running_pods;
      s.mean_defrag_admitted_pods += r.defrag->admitted_pods;
      s.mean_defrag_seconds += r.defrag->plan_seconds;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    PolicySummary& s = out[i];
    s.mean = mean_curve(curves[i]);
    s.mean_failed_pods /= s.seeds;
    s.mean_arrivals /= s.seeds;
    s.mean_wall_seconds /= s.seeds;
    s.mean_final_alloc_pct /= s.seeds;
    if (with_waste[i] == s.seeds)
      *s.mean_size_waste_pct /= s.seeds;
    else
      s.mean_size_waste_pct.reset();
    for (double* v : {&s.mean_alloc_pct_before_defrag, &s.mean_alloc_pct_after_defrag, &s.mean_moves,
                      &s.mean_running_pods, &s.mean_defrag_admitted_pods, &s.mean_defrag_seconds})
      *v /= s.seeds;
  }
  return out;
}

std::string format_defrag_table(const std::vector<PolicySummary>& summary) {
  bool any = false;
  for (const PolicySummary& s : summary) any = any || s.has_defrag;
  if (!any) return {};
  const size_t w = name_width(summary);
  std::string out = fmt::format("{:<{}} {:>9} {:>9} {:>7} {:>8} {:>9} {:>9} {:>9}\n", "defrag", w, "alloc %", "alloc %",
                                "gain", "moves", "running", "admitted", "plan s");
  out += fmt::format("{:<{}} {:>9} {:>9} {:>7} {:>8} {:>9} {:>9} {:>9}\n", "policy", w, "before", "after", "pp", "",
                     "pods", "pods", "per run");
  for (const PolicySummary& s : summary) {
    if (!s.has_defrag) continue;
    out += fmt::format("{:<{}} {:>9.2f} {:>9.2f} {:>7.2f} {:>8.1f} {:>9.1f} {:>9.1f} {:>9.3f}\n", s.policy, w,
                       s.mean_alloc_pct_before_defrag, s.mean_alloc_pct_after_defrag,
                       s.mean_alloc_pct_after_defrag - s.mean_alloc_pct_before_defrag, s.mean_moves,
                       s.mean_running_pods, s.mean_defrag_admitted_pods, s.mean_defrag_seconds);
  }
  return out;
}

std::string format_comparison_table(const std::vector<PolicySummary>& summary) {
  const size_t w = name_width(summary);
  std::string out = fmt::format("{:<{}} {:>6} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9}\n", "policy", w, "seeds",
                                "@90%", "@100%", "@110%", "@130%", "frag@130", "failed", "wall s");
  out += fmt::format("{:<{}} {:>6} {:>31} {:>8} {:>9} {:>9}\n", "", w, "", "GPU allocation % at arrived", "%", "pods",
                     "per run");
  // The best allocation where the runs ended (a run stops short of 130 %
  // arrived when --tune is below 1.3); "-" where a run never got there.
  size_t best = 0;
  for (size_t i = 1; i < summary.size(); ++i)
    if (summary[i].mean_final_alloc_pct > summary[best].mean_final_alloc_pct) best = i;
  auto cell = [](double v, int width) {
    return std::isnan(v) ? fmt::format("{:>{}}", "-", width) : fmt::format("{:>{}.2f}", v, width);
  };
  for (size_t i = 0; i < summary.size(); ++i) {
    const PolicySummary& s = summary[i];
    out += fmt::format("{:<{}} {:>6} {} {} {} {} {} {:>9.1f} {:>9.3f}{}\n", s.policy, w, s.seeds,
                       cell(at(s.mean.alloc_pct, 90), 7), cell(at(s.mean.alloc_pct, 100), 7),
                       cell(at(s.mean.alloc_pct, 110), 7), cell(at(s.mean.alloc_pct, 130), 7),
                       cell(at(s.mean.frag_pct, 130), 8), s.mean_failed_pods, s.mean_wall_seconds,
                       i == best && summary.size() > 1 ? "  <- best" : "");
  }
  return out;
}

void write_curves_csv(const std::string& path, const std::vector<StaticRunResult>& runs) {
  auto out = open_output(path);
  out << "policy,seed,arrived_pct,alloc_pct,frag_pct\n";
  for (const StaticRunResult& r : runs) {
    const Curve c = bucket_curve(r);
    for (int k = 0; k <= kMaxArrivedPct; ++k) {
      if (std::isnan(c.alloc_pct[k])) continue;
      out << fmt::format("{},{},{},{:.4f},{:.4f}\n", r.policy, r.seed, k, c.alloc_pct[k], c.frag_pct[k]);
    }
  }
  close_output(out, path);
}

void write_summary_json(const std::string& path, const std::vector<StaticRunResult>& runs,
                        const std::vector<PolicySummary>& summary, const std::string& cluster_label,
                        const std::string& workload_label, double tune, std::optional<double> mix_packing_bound_pct) {
  nlohmann::json j;
  j["cluster"] = cluster_label;
  j["workload"] = workload_label;
  j["tune"] = tune;
  j["capacity_gpu_milli"] = runs.empty() ? 0 : runs.front().capacity_milli;
  j["mix_packing_bound_pct"] = mix_packing_bound_pct ? nlohmann::json(*mix_packing_bound_pct) : nlohmann::json();
  auto& jr = j["runs"] = nlohmann::json::array();
  for (const StaticRunResult& r : runs) {
    const Curve c = bucket_curve(r);
    jr.push_back({{"policy", r.policy},
                  {"seed", r.seed},
                  {"arrivals", r.steps.size()},
                  {"final_alloc_pct", r.final_alloc_pct()},
                  {"final_frag_pct", r.steps.empty() ? 0.0 : 100.0 * r.steps.back().frag_milli / r.capacity_milli},
                  {"failed_pods", r.failed_pods},
                  {"wall_seconds", r.wall_seconds}});
    jr.back()["size_waste_pct"] = r.size_waste_milli && r.capacity_milli > 0
                                      ? nlohmann::json(100.0 * *r.size_waste_milli / r.capacity_milli)
                                      : nlohmann::json();
    if (r.defrag) {
      const StaticDefragResult& d = *r.defrag;
      auto& run = jr.back();
      run["alloc_pct_before_defrag"] = d.alloc_pct_before;
      run["alloc_pct_after_defrag"] = d.alloc_pct_after;
      run["moves"] = d.moves;
      run["running_pods"] = d.running_pods;
      run["defrag_method"] = d.method;
      run["defrag_max_moves"] = d.max_moves;
      run["defrag_admitted_pods"] = d.admitted_pods;
      run["free_gpus_before_defrag"] = d.free_gpus_before;
      run["free_gpus_after_defrag"] = d.free_gpus_after;
      run["free_nodes_before_defrag"] = d.free_nodes_before;
      run["free_nodes_after_defrag"] = d.free_nodes_after;
      run["defrag_seconds"] = d.plan_seconds;
    }
  }
  auto& jp = j["policies"] = nlohmann::json::object();
  for (const PolicySummary& s : summary) {
    nlohmann::json p = {{"seeds", s.seeds},
                        {"mean_final_alloc_pct", s.mean_final_alloc_pct},
                        {"mean_failed_pods", s.mean_failed_pods},
                        {"mean_wall_seconds", s.mean_wall_seconds}};
    p["mean_size_waste_pct"] = s.mean_size_waste_pct ? nlohmann::json(*s.mean_size_waste_pct) : nlohmann::json();
    for (int k : {90, 100, 110, 130}) {
      const double v = at(s.mean.alloc_pct, k);
      p[fmt::format("alloc_pct_at_{}", k)] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
    }
    if (s.has_defrag) {
      p["mean_alloc_pct_before_defrag"] = s.mean_alloc_pct_before_defrag;
      p["mean_alloc_pct_after_defrag"] = s.mean_alloc_pct_after_defrag;
      p["mean_moves"] = s.mean_moves;
      p["mean_running_pods"] = s.mean_running_pods;
    }
    jp[s.policy] = p;
  }
  auto out = open_output(path);
  out << j.dump(2) << "\n";
  close_output(out, path);
}

namespace {

// One chart panel: x = arrived % in [x_lo, x_hi], y = allocation % in
// [y_lo, y_hi], one polyline per policy.
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string last_point(const std::vector<double>& curve);

// One legend line per policy at x = left: its color and "policy (last point)"
// of the chosen curve.
std::string svg_legend(const std::vector<PolicySummary>& summary, double left, double top, bool fragmentation) {
  std::string svg;
  for (size_t i = 0; i < summary.size(); ++i) {
    const double ly = top + 10 + 20.0 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5:.1f}\">{6} ({7})</text>\n",
        left, ly, left + 25, kColors[i % std::size(kColors)], left + 31, ly + 4, summary[i].policy,
        last_point(fragmentation ? summary[i].mean.frag_pct : summary[i].mean.alloc_pct));
  }
  return svg;
}

// "94.42% at 130": the curve's last defined point (a run stops short of 130 %
// arrived when its workload does).
std::string last_point(const std::vector<double>& curve) {
  for (int k = kMaxArrivedPct; k >= 0; --k)
    if (!std::isnan(at(curve, k))) return fmt::format("{:.2f}% at {}", at(curve, k), k);
  return "no data";
}

std::string svg_panel(const std::vector<PolicySummary>& summary, double left, double top, double width, double height,
                      int x_lo, int x_hi, int x_step, int y_lo, int y_hi, int y_step, const std::string& caption,
                      bool fragmentation = false) {
  auto x = [&](double pct) { return left + (pct - x_lo) / (x_hi - x_lo) * width; };
  auto y = [&](double pct) { return top + (1.0 - (pct - y_lo) / (y_hi - y_lo)) * height; };
  std::string svg;
  for (int g = y_lo; g <= y_hi; g += y_step) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, y(g), left + width, left - 6, y(g) + 4, g);
  }
  for (int a = x_lo; a <= x_hi; a += x_step) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x(a), top, top + height, top + height + 16, a);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
      left, top, width, height, left + width / 2, top + height + 36, caption);
  svg += fmt::format("<clipPath id=\"clip{0}\"><rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\"/></clipPath>\n",
                     left, top, width, height);
  for (size_t i = 0; i < summary.size(); ++i) {
    std::string points;
    for (int k = x_lo; k <= x_hi; ++k) {
      const double v = at(fragmentation ? summary[i].mean.frag_pct : summary[i].mean.alloc_pct, k);
      if (!std::isnan(v)) points += fmt::format("{:.1f},{:.1f} ", x(k), y(v));
    }
    svg += fmt::format(
        "<polyline clip-path=\"url(#clip{})\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", left,
        kColors[i % std::size(kColors)], points);
  }
  return svg;
}

}  // namespace

void write_allocation_svg(const std::string& path, const std::vector<PolicySummary>& summary,
                          const std::string& title) {
  auto out = open_output(path);
  out << allocation_svg(summary, title);
  close_output(out, path);
}

std::string fragmentation_svg(const std::vector<PolicySummary>& summary, const std::string& title) {
  constexpr double kTop = 50, kHeight = 300, kLeft = 60, kWidth = 520, kLegend = kLeft + kWidth + 20;
  double highest = 1;
  for (const PolicySummary& s : summary)
    for (int k = 0; k <= kMaxArrivedPct; ++k)
      if (!std::isnan(at(s.mean.frag_pct, k))) highest = std::max(highest, at(s.mean.frag_pct, k));
  const int y_hi = std::min(100, static_cast<int>(std::ceil(highest / 10.0)) * 10);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n"
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">fragmentation (% of capacity)</text>\n",
      kLegend + 230, kTop + kHeight + 60, (kLegend + 230) / 2, title, kTop + kHeight / 2);
  svg += svg_panel(summary, kLeft, kTop, kWidth, kHeight, 0, kMaxArrivedPct, 10, 0, y_hi, y_hi >= 50 ? 10 : 5,
                   "arrived workload (% of cluster GPU capacity)", true);
  svg += svg_legend(summary, kLegend, kTop, true);
  return svg + "</svg>\n";
}

std::string allocation_svg(const std::vector<PolicySummary>& summary, const std::string& title) {
  // Left: the whole run (0..130 % arrived, 0..100 % allocated). Right: a zoom
  // on 80..130 % arrived, where the policies part ways.
  constexpr double kTop = 50, kHeight = 380, kLeftPanel = 60, kPanelWidth = 420, kGap = 70;
  constexpr double kRightPanel = kLeftPanel + kPanelWidth + kGap;
  constexpr double kLegend = kRightPanel + kPanelWidth + 20;
  double lowest = 100;
  for (const PolicySummary& s : summary)
    for (int k = 80; k <= kMaxArrivedPct; ++k)
      if (!std::isnan(at(s.mean.alloc_pct, k))) lowest = std::min(lowest, at(s.mean.alloc_pct, k));
  const int zoom_lo = std::clamp(static_cast<int>(std::floor(lowest / 5.0)) * 5, 0, 95);

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n"
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">GPU allocation (% of capacity)</text>\n",
      kLegend + 230, kTop + kHeight + 60, (kLegend + 230) / 2, title, kTop + kHeight / 2);
  svg += svg_panel(summary, kLeftPanel, kTop, kPanelWidth, kHeight, 0, kMaxArrivedPct, 10, 0, 100, 20,
                   "arrived workload (% of cluster GPU capacity)");
  svg += svg_panel(summary, kRightPanel, kTop, kPanelWidth, kHeight, 80, kMaxArrivedPct, 10, zoom_lo, 100,
                   zoom_lo >= 80 ? 2 : 5, "zoom: 80-130 % arrived");
  svg += svg_legend(summary, kLegend, kTop, false);
  svg += "</svg>\n";
  return svg;
}

void write_placements_csv(const std::string& path, const std::vector<StaticRunResult>& runs,
                          const std::vector<std::string>& node_names, const std::vector<std::string>& arrival_pods) {
  auto out = open_output(path);
  out << "policy,idx,pod,node,gpus\n";
  for (const StaticRunResult& r : runs) {
    for (size_t i = 0; i < r.placements.size(); ++i) {
      const Assignment& a = r.placements[i];
      std::string gpus;
      for (int g = 0; g < 32; ++g) {
        if (!((a.gpu_mask >> g) & 1u)) continue;
        if (!gpus.empty()) gpus += '|';
        gpus += std::to_string(g);
      }
      out << r.policy << ',' << i << ',' << (i < arrival_pods.size() ? arrival_pods[i] : "") << ','
          << (valid(a.node) ? node_names.at(index(a.node)) : "") << ',' << gpus << '\n';
    }
  }
  close_output(out, path);
}

}  // namespace gpupack
