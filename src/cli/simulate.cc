// gpupack simulate: the FGD paper's static-arrival experiment on an openb
// trace or on the built-in synthetic cluster; prints the policy comparison
// and writes the report files.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "analyze/gpu_map.h"
#include "cli/commands.h"
#include "cli/simulate_dynamic.h"
#include "defrag/methods.h"
#include "frag/cluster_metrics.h"
#include "frag/packing_prices.h"
#include "io/hw_input.h"
#include "io/input_error.h"
#include "io/openb.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sim/experiment.h"
#include "sim/report.h"
#include "sim/seeds.h"
#include "sim/synthetic.h"
#include "util/files.h"
#include "util/strings.h"

namespace gpupack::cli {
namespace {

struct SimulateFlags {
  std::string nodes, pods, cluster, workload, policy = "all", seeds = "42", out, order, node_rank, mode = "static";
  double tune = 1.3;
  int threads = 0;
  int synthetic_nodes = 1000;
  bool quiet = false;
  std::string defrag_budget, defrag_method = "planner", save_state;
};

// "5%" -> 0.05; "0.05" -> 0.05 (a fraction of running pods).
double parse_budget_fraction(const std::string& text) {
  std::string num = text;
  double scale = 1;
  if (!num.empty() && num.back() == '%') {
    num.pop_back();
    scale = 0.01;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size() || !(v * scale >= 0 && v * scale <= 1))
    throw std::invalid_argument(
        fmt::format("--defrag-budget: '{}' is not a share of running pods (e.g. 5% or 0.05)", text));
  return v * scale;
}

// Progress on stderr: on a terminal one line redrawn every 100 ms; otherwise
// (a log, CI) a whole line every 5 s and one when the runs are done.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}
  void update(const ExperimentProgress& p) {
    if (!enabled_) return;
    const bool done = p.jobs_done == p.jobs_total;
    const auto now = std::chrono::steady_clock::now();
    const auto every = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
    if (!done && now - last_ < every) return;
    if (done && printed_done_) return;
    if (last_ == std::chrono::steady_clock::time_point{} && !done && !tty_) {
      last_ = now;  // the first line comes after one interval, not at once
      return;
    }
    last_ = now;
    printed_done_ = done;
    const double pct = p.arrivals_total ? 100.0 * static_cast<double>(p.arrivals_done) / p.arrivals_total : 100.0;
    fmt::print(stderr, "{}simulate: {}/{} runs done, {:5.1f}% of arrivals scheduled{}", tty_ ? "\r" : "", p.jobs_done,
               p.jobs_total, pct, tty_ && !done ? "" : "\n");
  }

 private:
  bool enabled_, tty_;
  bool printed_done_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// The packing bound of the workload's mix (frag/packing_prices.h), in % of
// GPU capacity; only for workloads without hardware fields (MIG slices,
// sharing modes, GPU memory...), whose allocation is not GPU milli alone.
std::optional<double> mix_packing_bound_pct(const Workload& trace) {
  if (!gpu_use_is_milli(trace.requests)) return std::nullopt;
  const std::optional<double> bound = mix_packing_bound(trace.requests);
  if (!bound) return std::nullopt;
  return 100.0 * *bound;
}

std::string mix_packing_bound_line(const std::optional<double>& bound_pct) {
  if (!bound_pct) return {};
  return fmt::format(
      "packing bound of the workload's mix: {:.2f}% GPU allocation (no placement holds more while the pods it "
      "holds keep the workload's proportions; docs/SIMULATE.md)\n",
      *bound_pct);
}

// One self-contained page: the comparison table, the allocation and
// fragmentation curves, and each policy's GPU map after its arrivals (first
// seed; a selector switches between them).
void write_report_html(const std::string& path, const std::vector<PolicySummary>& summary,
                       const std::vector<std::string>& policies, const std::map<size_t, nlohmann::json>& maps,
                       const std::string& title, bool defrag, const std::string& bound_line) {
  nlohmann::json by_policy = nlohmann::json::object();
  for (const auto& [p, map] : maps) by_policy[policies.at(p)] = map;
  std::string page = gpu_map_page(title, maps.empty() ? nullptr : &maps.begin()->second);
  std::string head =
      "<div class=\"report-head\"><h2>Policies</h2><pre>" + html_escape(format_comparison_table(summary)) + "</pre>";
  if (!bound_line.empty()) head += "<p>" + html_escape(bound_line) + "</p>";
  if (defrag) head += "<pre>" + html_escape(format_defrag_table(summary)) + "</pre>";
  head += "<div>" + allocation_svg(summary, "GPU allocation vs arrived workload") + "</div><div>" +
          fragmentation_svg(summary, "Fragmentation vs arrived workload") + "</div></div>";
  std::string select = "<h2>GPU map after the arrivals (first seed) <select id=\"policy\" onchange=\"pick()\">";
  for (const auto& [p, map] : maps) select += "<option>" + html_escape(policies.at(p)) + "</option>";
  select += "</select></h2><script>const MAPS=" + script_json(by_policy) +
            ";function pick(){const p=document.getElementById('policy').value;DATA_OF=MAPS[p];render(MAPS[p]);}"
            "var DATA_OF=null;</script>";
  // Before the map's tools: the tables and charts, then the selector.
  const size_t tools = page.find("<div class=\"tools\">");
  page.insert(tools, head + select);
  // redraw() (filter, sort) draws the chosen policy's map.
  const size_t end = page.rfind("</body>");
  // report.html#map-only shows the map alone (a link for sharing it).
  page.insert(end,
              "<script>redraw=function(){render(DATA_OF||DATA);};if(location.hash==='#map-only')"
              "document.querySelectorAll('.report-head').forEach(e=>e.style.display='none');</script>");
  auto out = std::ofstream(path);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot open for writing", path));
  out << page;
  if (!out) throw std::runtime_error(fmt::format("{}: write failed", path));
}

void run_simulate(const SimulateFlags& f) {
  if (f.cluster.empty() && f.workload.empty() && f.nodes.empty() != f.pods.empty())
    throw std::invalid_argument("--nodes and --pods go together");
  if (!f.nodes.empty() && !f.cluster.empty()) throw std::invalid_argument("--nodes and --cluster exclude each other");
  if (!f.pods.empty() && !f.workload.empty()) throw std::invalid_argument("--pods and --workload exclude each other");
  const std::string node_file = f.nodes.empty() ? f.cluster : f.nodes;
  const std::string pod_file = f.pods.empty() ? f.workload : f.pods;
  if (node_file.empty() != pod_file.empty())
    throw std::invalid_argument("a cluster (--nodes or --cluster) and a workload (--pods or --workload) go together");
  if (!(f.tune > 0 && f.tune <= 10)) throw std::invalid_argument(fmt::format("--tune {} is outside (0, 10]", f.tune));
  ExperimentSpec spec;
  std::string cluster_label, workload_label;
  if (!node_file.empty()) {
    spec.nodes = f.cluster.empty() ? read_openb_nodes(f.nodes) : read_hw_cluster(f.cluster).nodes;
    spec.trace = f.workload.empty() ? to_workload(read_openb_pods(f.pods)) : read_hw_workload(f.workload);
    cluster_label = std::filesystem::path(node_file).filename().string();
    workload_label = std::filesystem::path(pod_file).stem().string();
  } else {
    SyntheticOptions opt;
    opt.node_count = f.synthetic_nodes;
    spec.nodes = synthetic_nodes(opt);
    spec.trace = synthetic_workload(opt, ClusterState(spec.nodes).gpu_capacity_milli());
    cluster_label = "synthetic";  // the counts follow wherever the label is printed
    workload_label = "synthetic";
  }
  spec.trace.sort_by_name();
  const std::string source = !f.pods.empty() ? f.pods : !f.workload.empty() ? f.workload : "the synthetic workload";
  if (spec.trace.size() == 0) throw InputError(fmt::format("{}: no pods: nothing to place", source));
  if (spec.trace.total_gpu_milli() == 0)
    throw InputError(fmt::format("{}: no pod asks for a GPU: the GPU allocation curves would be empty", source));
  if (!f.out.empty()) ensure_output_dir(f.out, "--out");  // before the run, not after it
  spec.policies = f.policy == "all" ? policy_names() : split(f.policy, ',');
  spec.seeds = parse_seeds(f.seeds);
  spec.tune = f.tune;
  spec.threads = f.threads;
  if (!f.defrag_budget.empty()) {
    spec.defrag = StaticDefragSpec{};
    spec.defrag->budget_fraction = parse_budget_fraction(f.defrag_budget);
    spec.defrag->method = f.defrag_method;
  }
  spec.save_state_path = f.save_state;

  std::vector<std::string> arrival_pods;
  if (!f.order.empty()) {
    std::unordered_map<std::string, int32_t> by_name;
    for (size_t i = 0; i < spec.trace.size(); ++i) by_name.emplace(spec.trace.names[i], static_cast<int32_t>(i));
    arrival_pods = read_arrival_order(f.order);
    std::vector<int32_t> order;
    for (size_t i = 0; i < arrival_pods.size(); ++i) {
      auto it = by_name.find(arrival_pods[i]);
      if (it == by_name.end())
        throw InputError(
            fmt::format("{}:{}: column 'pod': not in the pod file (value '{}')", f.order, i + 2, arrival_pods[i]));
      order.push_back(it->second);
    }
    spec.fixed_order = std::move(order);
  }
  if (!f.node_rank.empty()) {
    std::unordered_map<std::string, int64_t> rank_by_node;
    for (const auto& r : read_node_rank(f.node_rank)) {
      if (!rank_by_node.emplace(r.node, r.rank).second)
        throw InputError(fmt::format("{}: node '{}' is ranked twice", f.node_rank, r.node));
    }
    std::vector<int64_t> rank;
    for (const NodeSpec& n : spec.nodes) {
      auto it = rank_by_node.find(n.name);
      if (it == rank_by_node.end()) throw InputError(fmt::format("{}: node '{}' has no rank", f.node_rank, n.name));
      rank.push_back(it->second);
    }
    spec.node_rank = std::move(rank);
  }

  if (!f.quiet)
    fmt::print("cluster: {} ({} nodes, {} GPUs); workload: {} ({} pods); tune {}; seeds {}; policies {}\n",
               cluster_label, spec.nodes.size(), ClusterState(spec.nodes).total_gpus(), workload_label,
               spec.trace.size(), spec.tune, f.seeds, f.policy);
  // report.html: the GPU map of each policy's first seed after its arrivals.
  std::mutex maps_mu;
  std::map<size_t, nlohmann::json> maps;  // policy index -> map
  std::shared_ptr<const TargetWorkload> map_target;
  std::vector<Request> map_probes;
  if (!f.out.empty()) {
    map_target = std::make_shared<const TargetWorkload>(
        TargetWorkload::from_requests(spec.trace.requests, spec.trace.model_keys));
    // Stranded = no request of the workload could use the free capacity: its
    // FGD classes, and each distinct request with hardware fields (a MIG
    // profile, a sharing mode, GPU memory...), which the classes do not carry.
    for (const TargetClass& c : map_target->classes) {
      Request r;
      r.cpu_milli = c.cpu_milli;
      r.gpu_count = c.gpu_count;
      r.gpu_milli = c.gpu_milli;
      r.allowed_models = c.allowed_models;
      map_probes.push_back(r);
    }
    for (const Request& r : spec.trace.requests)
      if (!r.is_plain() && map_probes.size() < 500 &&
          std::find(map_probes.begin(), map_probes.end(), r) == map_probes.end())
        map_probes.push_back(r);
    spec.on_final_state = [&, seeds = spec.seeds.size()](size_t job, const ClusterState& state,
                                                         std::span<const std::string> names) {
      if (job % seeds != 0) return;
      nlohmann::json map = gpu_map_json(state, cluster_metrics(state, *map_target, map_probes), names);
      std::lock_guard lock(maps_mu);
      maps[job / seeds] = std::move(map);
    };
  }
  ProgressLine progress(!f.quiet);
  const auto runs = run_experiment(spec, [&](const ExperimentProgress& p) { progress.update(p); });
  const auto summary = summarize(runs);
  const std::optional<double> bound_pct = mix_packing_bound_pct(spec.trace);
  fmt::print("{}", format_comparison_table(summary));
  if (!f.quiet) fmt::print("{}", mix_packing_bound_line(bound_pct));
  if (spec.defrag) fmt::print("\n{}", format_defrag_table(summary));

  if (!f.out.empty()) {
    std::filesystem::create_directories(f.out);
    const std::string dir = f.out + "/";
    write_curves_csv(dir + "curves.csv", runs);
    write_summary_json(dir + "summary.json", runs, summary, cluster_label, workload_label, spec.tune, bound_pct);
    write_allocation_svg(dir + "allocation.svg", summary,
                         fmt::format("GPU allocation vs arrived workload: {}", workload_label));
    write_report_html(dir + "report.html", summary, spec.policies, maps,
                      fmt::format("gpupack simulate: {} on {}", workload_label, cluster_label), spec.defrag.has_value(),
                      mix_packing_bound_line(bound_pct));
    std::vector<std::string> files = {"curves.csv", "summary.json", "allocation.svg", "report.html"};
    if (spec.fixed_order) {
      std::vector<std::string> node_names;
      for (const NodeSpec& n : spec.nodes) node_names.push_back(n.name);
      write_placements_csv(dir + "placements.csv", runs, node_names, arrival_pods);
      files.push_back("placements.csv");
    }
    if (!f.quiet) {
      std::string list;
      for (const auto& name : files) list += (list.empty() ? "" : ", ") + name;
      fmt::print("wrote {} in {}\n", list, f.out);
    }
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  auto* cmd = app.add_subcommand("simulate", "replay a workload against a cluster and compare placement policies");
  cmd->add_option("--nodes", flags->nodes, "openb node CSV (sn,cpu_milli,memory_mib,gpu,model)");
  cmd->add_option("--pods", flags->pods, "openb pod CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])");
  cmd->add_option("--cluster", flags->cluster, "cluster YAML (node pools, GPU modes, MIG layouts, topology)");
  cmd->add_option("--workload", flags->workload, "workload CSV or YAML with hardware fields (docs/HARDWARE.md)");
  cmd->add_option("--policy", flags->policy,
                  "policy name, comma-separated names, or 'all': " + policy_name_list() +
                      " (fgd, capfrag, poolfrag or dualfrag + '+learned': target learned from the "
                      "arrivals so far, e.g. fgd+learned)")
      ->capture_default_str();
  cmd->add_option("--seeds", flags->seeds, "seeds: 42, 42-51 or 1,5,7-9")->capture_default_str();
  cmd->add_option("--tune", flags->tune, "arrived GPU request as a multiple of cluster GPU capacity")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out,
                  "write report.html, curves.csv, summary.json, allocation.svg (and placements.csv) in this folder");
  cmd->add_option("--order", flags->order, "replay this arrival order (idx,pod) instead of sampling");
  cmd->add_option("--node-rank", flags->node_rank, "node tie-break ranks (node,rank); lower rank wins ties");
  cmd->add_option("--threads", flags->threads, "worker threads (0 = all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--synthetic-nodes", flags->synthetic_nodes,
                  "size of the built-in synthetic cluster used without --nodes/--pods")
      ->capture_default_str();
  cmd->add_flag("--quiet", flags->quiet, "print only the comparison table");
  cmd->add_option("--defrag-budget", flags->defrag_budget,
                  "after the arrivals, defragment moving at most this share of running pods (e.g. 5%), then retry "
                  "the failed pods; adds alloc_pct_before/after_defrag, moves, running_pods to summary.json");
  cmd->add_option("--defrag-method", flags->defrag_method, "with --defrag-budget: " + defrag_method_name_list())
      ->capture_default_str();
  cmd->add_option("--save-state", flags->save_state,
                  "write the first run's state after its arrivals (gpupack-state/v1 JSON, for gpupack defrag)");
  cmd->add_option("--mode", flags->mode, "static (the FGD paper's experiment) or dynamic (arrivals and departures)")
      ->check(CLI::IsMember({"static", "dynamic"}))
      ->capture_default_str();
  auto dynamic = add_dynamic_simulate_options(*cmd);
  cmd->callback([flags, dynamic] {
    if (flags->mode == "dynamic")
      run_dynamic_simulate(
          *dynamic, {flags->nodes, flags->pods, flags->policy, flags->seeds, flags->out, flags->node_rank, flags->quiet,
                     flags->defrag_budget.empty() ? 0.05 : parse_budget_fraction(flags->defrag_budget)});
    else
      run_simulate(*flags);
  });
}

}  // namespace gpupack::cli
