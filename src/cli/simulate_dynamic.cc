// gpupack simulate --mode dynamic: jobs arrive, queue, run and leave, on an
// openb trace (its creation/deletion times) or on a generated gang workload;
// prints the comparison table and writes series.csv, summary.json and
// dynamic.svg.
#include "cli/simulate_dynamic.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "io/csv.h"
#include "io/input_error.h"
#include "io/openb.h"
#include "policy/registry.h"
#include "sim/dynamic_experiment.h"
#include "sim/dynamic_report.h"
#include "sim/seeds.h"
#include "util/strings.h"

namespace gpupack::cli {
namespace {

int64_t int_flag(const std::string& flag, const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0)
    throw std::invalid_argument(fmt::format("{}: '{}' is not a non-negative integer", flag, s));
  return v;
}

// "team-a=16000,team-b=8000" (GPU milli) -> quotas.
std::map<std::string, int64_t> parse_quota(const std::string& text) {
  std::map<std::string, int64_t> out;
  if (text.empty()) return out;
  for (const std::string& part : split(text, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument(fmt::format("--quota: '{}' is not queue=gpu_milli", part));
    out[part.substr(0, eq)] = int_flag("--quota", part.substr(eq + 1));
  }
  return out;
}

// "MxG[@milli]:weight,..." -> shapes (M members of G GPUs, each GPU's
// share in milli, default 1000).
std::vector<GangShape> parse_gang_shapes(const std::string& text) {
  std::vector<GangShape> out;
  for (const std::string& part : split(text, ',')) {
    const size_t x = part.find('x'), colon = part.find(':');
    if (x == std::string::npos || colon == std::string::npos || colon < x)
      throw std::invalid_argument(fmt::format("--gang-shapes: '{}' is not MxG[@milli]:weight", part));
    GangShape s;
    s.members = static_cast<int>(int_flag("--gang-shapes", part.substr(0, x)));
    std::string gpus = part.substr(x + 1, colon - x - 1);
    if (const size_t at = gpus.find('@'); at != std::string::npos) {
      s.gpu_milli = static_cast<int32_t>(int_flag("--gang-shapes", gpus.substr(at + 1)));
      gpus.resize(at);
    }
    s.gpus_per_member = static_cast<int>(int_flag("--gang-shapes", gpus));
    const std::string weight = part.substr(colon + 1);
    size_t used = 0;
    try {
      s.weight = std::stod(weight, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != weight.size())
      throw std::invalid_argument(fmt::format("--gang-shapes: '{}' has no numeric weight", part));
    out.push_back(s);
  }
  if (out.empty()) throw std::invalid_argument("--gang-shapes: no shape");
  return out;
}

// node,rack CSV -> rack per node (every node must be named).
std::vector<std::string> read_racks(const std::string& path, const std::vector<NodeSpec>& nodes) {
  const CsvTable t = CsvTable::read(path);
  const int node_col = t.column("node"), rack_col = t.column("rack");
  std::unordered_map<std::string, std::string> rack;
  for (const auto& row : t.rows()) {
    const std::string& n = t.field(row, node_col);
    if (!rack.emplace(n, t.field(row, rack_col)).second) t.fail(row, node_col, "node listed twice");
  }
  std::vector<std::string> out;
  for (const NodeSpec& n : nodes) {
    auto it = rack.find(n.name);
    if (it == rack.end()) throw InputError(fmt::format("{}: node '{}' has no rack", path, n.name));
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

std::shared_ptr<DynamicFlags> add_dynamic_simulate_options(CLI::App& cmd) {
  auto d = std::make_shared<DynamicFlags>();
  cmd.add_flag("--backfill", d->backfill, "dynamic: EASY backfill behind a reservation for the blocked head job");
  cmd.add_flag("--strict-fifo", d->strict_fifo, "dynamic: stop each pass at the first job that does not fit");
  cmd.add_flag("--preemption", d->preemption, "dynamic: higher-priority jobs may evict lower-priority ones");
  cmd.add_option("--jobs", d->jobs, "dynamic, generated workload: number of jobs")->capture_default_str();
  cmd.add_option("--gang-nodes", d->gang_nodes, "dynamic, generated workload: cluster nodes")->capture_default_str();
  cmd.add_option("--gpus-per-node", d->gpus_per_node, "dynamic, generated workload: GPUs per node")
      ->capture_default_str();
  cmd.add_option("--nodes-per-rack", d->nodes_per_rack,
                 "dynamic: consecutive nodes per rack (generated cluster; openb nodes too unless --racks)")
      ->capture_default_str();
  cmd.add_option("--gang-shapes", d->gang_shapes,
                 "dynamic, generated workload: job shapes MxG[@milli]:weight,... (M members of G GPUs, each GPU's "
                 "share in milli, below 1000 only with G = 1); default "
                 "1x1:.35,1x2:.1,1x4:.1,1x8:.1,2x8:.12,4x8:.1,8x8:.08,16x8:.05");
  cmd.add_option("--interarrival", d->interarrival_s, "dynamic, generated workload: mean seconds between jobs")
      ->capture_default_str();
  cmd.add_option("--no-estimate", d->no_estimate_fraction,
                 "dynamic, generated workload: fraction of jobs without a runtime estimate")
      ->capture_default_str();
  cmd.add_option("--max-overestimate", d->max_overestimate,
                 "dynamic, generated workload: estimates are runtime x U[1, this]")
      ->capture_default_str();
  cmd.add_option("--arrival-scale", d->arrival_scale,
                 "dynamic, openb: multiply submission times by this (< 1 compresses arrivals, runtimes unchanged)")
      ->capture_default_str();
  cmd.add_option("--racks", d->racks, "dynamic: node,rack CSV naming each node's rack (gang domain)");
  cmd.add_option("--defrag-every", d->defrag_every_min,
                 "dynamic: run the defragmentation planner every this many minutes (0 = never); "
                 "--defrag-budget sets the share of running pods it may move (default 5%)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_flag("--defrag-on-room", d->defrag_on_room,
               "dynamic: when the job at the head of the queue does not fit although the free GPU, CPU and memory "
               "summed over nodes suffice, plan moves of single-pod jobs so that all its pods fit (at most "
               "--defrag-budget of the running pods) and start it");
  cmd.add_option("--quota", d->quota, "dynamic: per-queue GPU quota, queue=gpu_milli[,...]");
  return d;
}

void run_dynamic_simulate(const DynamicFlags& d, const SharedSimulateFlags& f) {
  if (f.nodes.empty() != f.pods.empty()) throw std::invalid_argument("--nodes and --pods go together");
  if (d.backfill && d.strict_fifo) throw std::invalid_argument("--backfill and --strict-fifo exclude each other");
  if (d.jobs <= 0) throw std::invalid_argument(fmt::format("--jobs {} must be positive", d.jobs));
  if (!(d.no_estimate_fraction >= 0 && d.no_estimate_fraction <= 1))
    throw std::invalid_argument(fmt::format("--no-estimate {} is outside [0, 1]", d.no_estimate_fraction));
  if (!(d.arrival_scale > 0 && d.arrival_scale <= 1))
    throw std::invalid_argument(fmt::format("--arrival-scale {} is outside (0, 1]", d.arrival_scale));
  if (d.nodes_per_rack < 0) throw std::invalid_argument("--nodes-per-rack must be >= 0");
  const std::vector<uint64_t> seeds = parse_seeds(f.seeds);

  std::vector<NodeSpec> nodes;
  std::vector<std::string> racks;
  DynamicExperimentSpec spec;
  std::string cluster_label, workload_label;
  if (!f.nodes.empty()) {
    nodes = read_openb_nodes(f.nodes);
    DynamicWorkload workload = jobs_from_openb(read_openb_pods(f.pods));
    for (DynamicJob& j : workload.jobs)
      j.submit_s = static_cast<int64_t>(static_cast<double>(j.submit_s) * d.arrival_scale);
    cluster_label = std::filesystem::path(f.nodes).filename().string();
    workload_label = std::filesystem::path(f.pods).stem().string();
    if (d.arrival_scale != 1) workload_label += fmt::format(" (arrivals x {})", d.arrival_scale);
    spec.workload = std::move(workload);
  } else {
    const GangCluster c = gang_cluster(d.gang_nodes, d.gpus_per_node, std::max(1, d.nodes_per_rack));
    nodes = c.nodes;
    racks = c.rack_of_node;
    GangWorkloadOptions g;
    g.jobs = d.jobs;
    g.mean_interarrival_s = d.interarrival_s;
    g.no_estimate_fraction = d.no_estimate_fraction;
    g.max_overestimate = d.max_overestimate;
    if (!d.gang_shapes.empty()) g.shapes = parse_gang_shapes(d.gang_shapes);
    spec.generated = g;
    cluster_label =
        fmt::format("generated ({} nodes x {} GPUs, {} per rack)", d.gang_nodes, d.gpus_per_node, d.nodes_per_rack);
    workload_label = fmt::format("generated gangs ({} jobs, seed{} {})", d.jobs, seeds.size() > 1 ? "s" : "", f.seeds);
  }
  if (!d.racks.empty()) {
    racks = read_racks(d.racks, nodes);
  } else if (!f.nodes.empty() && d.nodes_per_rack > 0) {
    for (size_t i = 0; i < nodes.size(); ++i) racks.push_back(fmt::format("rack-{}", i / d.nodes_per_rack));
  }

  DynamicOptions& options = spec.options;
  options.mode = d.backfill ? QueueMode::kBackfill : d.strict_fifo ? QueueMode::kStrictFifo : QueueMode::kNoBlocking;
  options.preemption = d.preemption;
  options.quota_gpu_milli = parse_quota(d.quota);
  if (!racks.empty()) options.levels.push_back({"rack", racks});
  options.defrag_every_s = static_cast<int64_t>(d.defrag_every_min * 60);
  options.defrag_budget_fraction = f.defrag_budget_fraction;
  options.defrag_on_room = d.defrag_on_room;
  if (!f.node_rank.empty()) {
    // Exact replay: the ranks given, not the seeded ones.
    std::unordered_map<std::string, int64_t> rank;
    for (const NodeRank& r : read_node_rank(f.node_rank)) rank[r.node] = r.rank;
    for (const NodeSpec& n : nodes) {
      auto it = rank.find(n.name);
      if (it == rank.end())
        throw std::invalid_argument(fmt::format("--node-rank {}: no rank for node {}", f.node_rank, n.name));
      spec.node_rank.push_back(it->second);
    }
  }
  spec.nodes = nodes;
  spec.seeds = seeds;
  spec.policies = f.policy == "all" ? policy_names() : split(f.policy, ',');
  spec.label_suffix = std::string(d.backfill      ? "+backfill"
                                  : d.strict_fifo ? "+fifo"
                                                  : "") +
                      (d.preemption ? "+preempt" : "") + (d.defrag_every_min > 0 ? "+defrag" : "") +
                      (d.defrag_on_room ? "+room" : "");
  if (!f.quiet)
    fmt::print("dynamic: cluster {} ({} nodes); workload {}; {} polic{} x {} seed{}; queue {}{}\n", cluster_label,
               nodes.size(), workload_label, spec.policies.size(), spec.policies.size() == 1 ? "y" : "ies",
               seeds.size(), seeds.size() == 1 ? "" : "s",
               d.backfill      ? "EASY backfill"
               : d.strict_fifo ? "strict FIFO"
                               : "no head-of-line blocking",
               d.preemption ? ", preemption on" : "");
  const size_t total = spec.policies.size() * seeds.size();
  size_t finished = 0;
  const auto experiment = run_dynamic_experiment(spec, [&](const DynamicExperimentRun& r) {
    ++finished;
    if (!f.quiet && total > 1)
      fmt::print(stderr, "[{}/{}] {}: {} jobs, {:.1f} s\n", finished, total, r.label, r.jobs, r.result.wall_seconds);
  });
  std::vector<DynamicRunResult> runs;
  std::vector<DynamicSummary> rows;
  std::vector<std::string> labels;
  for (const DynamicExperimentRun& r : experiment) {
    runs.push_back(r.result);
    rows.push_back(r.summary);
    labels.push_back(r.label);
  }
  fmt::print("{}", format_dynamic_table(rows));
  if (!f.out.empty()) {
    std::filesystem::create_directories(f.out);
    const std::string dir = f.out + "/";
    write_dynamic_series_csv(dir + "series.csv", runs, labels);
    write_dynamic_summary_json(dir + "summary.json", rows, cluster_label, workload_label);
    write_dynamic_svg(dir + "dynamic.svg", runs, labels, fmt::format("Dynamic run: {}", workload_label));
    write_dynamic_placements_csv(dir + "placements.csv", experiment);
    if (!f.quiet) fmt::print("wrote series.csv, summary.json, dynamic.svg, placements.csv in {}\n", f.out);
  }
}

}  // namespace gpupack::cli
