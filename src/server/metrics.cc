#include "server/metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "util/heap.h"
#include "util/version.h"

namespace gpupack {

void LatencyHistogram::observe(const std::string& verb, double seconds) {
  std::lock_guard lock(mu_);
  Series& s = series_[verb];
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      ++s.buckets[i];
      break;
    }
  }
  ++s.count;
  s.sum += seconds;
  if (s.window.size() < kLatencyWindow) {
    s.window.push_back(seconds);
  } else {
    s.window[s.next] = seconds;
    s.next = (s.next + 1) % kLatencyWindow;
  }
}

double LatencyHistogram::quantile(const std::string& verb, double q) const {
  std::vector<double> w;
  {
    std::lock_guard lock(mu_);
    auto it = series_.find(verb);
    if (it == series_.end() || it->second.window.empty()) return 0;
    w = it->second.window;
  }
  q = std::clamp(q, 0.0, 1.0);
  const size_t k =
      std::min(w.size() - 1, static_cast<size_t>(std::ceil(q * static_cast<double>(w.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), w.end());
  return w[k];
}

size_t LatencyHistogram::count(const std::string& verb) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(verb);
  return it == series_.end() ? 0 : it->second.count;
}

void LatencyHistogram::reset() {
  std::lock_guard lock(mu_);
  series_.clear();
}

std::map<std::string, LatencyHistogram::Series> LatencyHistogram::snapshot() const {
  std::lock_guard lock(mu_);
  std::map<std::string, Series> out;
  for (const auto& [verb, s] : series_) {
    Series c;
    c.buckets = s.buckets;
    c.count = s.count;
    c.sum = s.sum;
    out[verb] = std::move(c);
  }
  return out;
}

void RequestCounters::add(const std::string& verb, int code) {
  std::lock_guard lock(mu_);
  ++counts_[{verb, code}];
}

std::map<std::pair<std::string, int>, uint64_t> RequestCounters::snapshot() const {
  std::lock_guard lock(mu_);
  return counts_;
}

std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// Labels of a per-GPU series: gpupack's node, gpu, model, and Hostname (the
// node name), so that dcgm-exporter's series (Hostname, gpu) join them.
std::string gpu_labels(const ClusterMetrics::Gpu& g) {
  return fmt::format("node=\"{}\",Hostname=\"{}\",gpu=\"{}\",model=\"{}\"", escape_label(g.node), escape_label(g.node),
                     g.gpu, escape_label(g.model));
}

}  // namespace

std::string render_metrics(const ServiceMetrics& m, const LatencyHistogram& latency, const RequestCounters& requests) {
  std::string out;
  out.reserve(256 + m.gpus.size() * 400);
  constexpr double kMiB = 1024.0 * 1024.0;

  header(out, "gpupack_nodes", "gauge", "Nodes in gpupack's cluster model.");
  out += fmt::format("gpupack_nodes {}\n", m.node_count);
  header(out, "gpupack_bound_pods", "gauge", "Pods gpupack accounts as bound.");
  out += fmt::format("gpupack_bound_pods {}\n", m.bound_pods);
  header(out, "gpupack_placements_total", "counter",
         "Placements gpupack learned without the API: assumed at prioritize, then confirmed or expired.");
  out += fmt::format("gpupack_placements_total{{state=\"assumed\"}} {}\n", m.placements_assumed);
  out += fmt::format("gpupack_placements_total{{state=\"confirmed\"}} {}\n", m.placements_confirmed);
  out += fmt::format("gpupack_placements_total{{state=\"expired\"}} {}\n", m.placements_expired);
  header(out, "gpupack_assumed_pods", "gauge",
         "Pods placed by assumption now (not yet confirmed by a bind or the API).");
  out += fmt::format("gpupack_assumed_pods {}\n", m.assumed_now);
  header(out, "gpupack_gangs_waiting", "gauge", "Gangs planned whose minimum has not yet bound (GPUs reserved).");
  out += fmt::format("gpupack_gangs_waiting {}\n", m.gangs_waiting);
  header(out, "gpupack_gangs_total", "counter", "Gangs bound whole (placed) or dropped at their timeout (timed_out).");
  out += fmt::format("gpupack_gangs_total{{outcome=\"placed\"}} {}\n", m.gangs_placed);
  out += fmt::format("gpupack_gangs_total{{outcome=\"timed_out\"}} {}\n", m.gangs_timed_out);
  header(out, "gpupack_model_reloads_total", "counter",
         "Whole-model rebuilds from the cluster objects (snapshot load, relist, watch flush).");
  out += fmt::format("gpupack_model_reloads_total {}\n", m.model_reloads);
  header(out, "gpupack_model_reload_seconds_total", "counter",
         "Wall time of those rebuilds, from the objects to the new model in place (built outside the lock).");
  out += fmt::format("gpupack_model_reload_seconds_total {}\n", m.model_reload_seconds);
  header(out, "gpupack_model_pod_updates_total", "counter",
         "Watch flushes of pod events applied to the model in place (no rebuild).");
  out += fmt::format("gpupack_model_pod_updates_total {}\n", m.model_pod_updates);
  header(out, "gpupack_gang_reserved_gpus", "gauge", "GPUs (fractions summed) reserved for planned gang members.");
  out += fmt::format("gpupack_gang_reserved_gpus {}\n", static_cast<double>(m.gang_reserved_gpu_milli) / 1000.0);
  header(out, "gpupack_gang_binds_held", "gauge", "Binds of gang members waiting for their gang's minimum.");
  out += fmt::format("gpupack_gang_binds_held {}\n", m.gang_binds_held);
  header(out, "gpupack_charge_conflicts_total", "counter",
         "Running pods that claimed more than their node had left (over-commit by another scheduler).");
  out += fmt::format("gpupack_charge_conflicts_total {}\n", m.charge_conflicts);
  header(out, "gpupack_unknown_gpu_product_nodes", "gauge",
         "Nodes whose nvidia.com/gpu.product is not in gpupack's catalog (each product its own pool).");
  for (const auto& [product, nodes] : m.unknown_gpu_products)
    out += fmt::format("gpupack_unknown_gpu_product_nodes{{product=\"{}\"}} {}\n", escape_label(product), nodes);

  header(out, "gpupack_metrics_nodes_omitted", "gauge",
         "Nodes with GPUs whose per-node and per-GPU series are left out (--metrics-max-nodes); pools cover them.");
  out += fmt::format("gpupack_metrics_nodes_omitted {}\n", m.metrics_nodes_omitted);
  header(out, "gpupack_gpu_allocated_ratio", "gauge", "Share of the GPU allocated (0..1; 1 = whole).");
  for (const auto& g : m.gpus)
    out += fmt::format("gpupack_gpu_allocated_ratio{{{}}} {}\n", gpu_labels(g), num(g.allocated_milli / 1000.0));
  header(out, "gpupack_gpu_allocated_memory_bytes", "gauge", "GPU memory allocated to pods on the GPU.");
  for (const auto& g : m.gpus)
    out +=
        fmt::format("gpupack_gpu_allocated_memory_bytes{{{}}} {}\n", gpu_labels(g), num(g.allocated_memory_mib * kMiB));
  header(out, "gpupack_gpu_memory_bytes", "gauge", "GPU memory capacity (GPUs whose memory is known).");
  for (const auto& g : m.gpus)
    if (g.memory_mib > 0)
      out += fmt::format("gpupack_gpu_memory_bytes{{{}}} {}\n", gpu_labels(g), num(g.memory_mib * kMiB));
  header(out, "gpupack_gpu_stranded_memory_bytes", "gauge",
         "Free memory on a GPU that no pending pod (or, with none pending, no typical pod) can use.");
  for (const auto& g : m.gpus)
    out +=
        fmt::format("gpupack_gpu_stranded_memory_bytes{{{}}} {}\n", gpu_labels(g), num(g.stranded_memory_mib * kMiB));

  header(out, "gpupack_node_allocated_gpus", "gauge", "GPUs allocated on the node (fractions summed).");
  for (const auto& n : m.nodes)
    out +=
        fmt::format("gpupack_node_allocated_gpus{{node=\"{}\",Hostname=\"{}\",model=\"{}\"}} {}\n",
                    escape_label(n.name), escape_label(n.name), escape_label(n.model), num(n.allocated_milli / 1000.0));
  header(out, "gpupack_node_capacity_gpus", "gauge", "GPUs of the node.");
  for (const auto& n : m.nodes)
    out +=
        fmt::format("gpupack_node_capacity_gpus{{node=\"{}\",Hostname=\"{}\",model=\"{}\"}} {}\n", escape_label(n.name),
                    escape_label(n.name), escape_label(n.model), num(n.capacity_milli / 1000.0));
  header(out, "gpupack_node_mig_slots_allocated", "gauge", "MIG devices of a profile allocated on the node.");
  for (const auto& n : m.nodes)
    for (const auto& [profile, v] : n.mig)
      out += fmt::format("gpupack_node_mig_slots_allocated{{node=\"{}\",profile=\"{}\"}} {}\n", escape_label(n.name),
                         escape_label(profile), v.first);
  header(out, "gpupack_node_mig_slots", "gauge", "MIG devices of a profile the node offers (allocatable).");
  for (const auto& n : m.nodes)
    for (const auto& [profile, v] : n.mig)
      out += fmt::format("gpupack_node_mig_slots{{node=\"{}\",profile=\"{}\"}} {}\n", escape_label(n.name),
                         escape_label(profile), v.second);

  header(out, "gpupack_cluster_fragmentation_gpus", "gauge",
         "FGD fragmentation of the cluster: expected free GPU capacity typical requests cannot use, in GPUs.");
  out += fmt::format("gpupack_cluster_fragmentation_gpus {}\n", num(m.cluster_fragmentation_milli / 1000.0));
  header(out, "gpupack_cluster_fragmentation_ratio", "gauge",
         "Cluster FGD fragmentation over the free GPU capacity (0..1).");
  out += fmt::format("gpupack_cluster_fragmentation_ratio {}\n",
                     num(m.cluster_free_milli > 0 ? m.cluster_fragmentation_milli / m.cluster_free_milli : 0.0));
  header(out, "gpupack_pool_fragmentation_gpus", "gauge", "FGD fragmentation of a pool (GPU model), in GPUs.");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_pool_fragmentation_gpus{{pool=\"{}\"}} {}\n", escape_label(p.model),
                       num(p.fragmentation_milli / 1000.0));
  header(out, "gpupack_pool_fragmentation_ratio", "gauge",
         "Pool FGD fragmentation over the pool's free GPU capacity (0..1).");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_pool_fragmentation_ratio{{pool=\"{}\"}} {}\n", escape_label(p.model),
                       num(p.free_milli > 0 ? p.fragmentation_milli / p.free_milli : 0.0));
  header(out, "gpupack_pool_free_gpus", "gauge", "Free GPU capacity of a pool, in GPUs (fractions summed).");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_pool_free_gpus{{pool=\"{}\"}} {}\n", escape_label(p.model), num(p.free_milli / 1000.0));
  header(out, "gpupack_pool_capacity_gpus", "gauge", "GPUs of a pool.");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_pool_capacity_gpus{{pool=\"{}\"}} {}\n", escape_label(p.model),
                       num(p.capacity_milli / 1000.0));
  header(out, "gpupack_stranded_gpus", "gauge", "GPUs with free capacity that no pending or typical pod can use.");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_stranded_gpus{{pool=\"{}\"}} {}\n", escape_label(p.model), p.stranded_gpus);
  header(out, "gpupack_pool_stranded_memory_bytes", "gauge",
         "Free memory of a pool's stranded GPUs (no pending or typical pod can use them).");
  for (const auto& p : m.pools)
    out += fmt::format("gpupack_pool_stranded_memory_bytes{{pool=\"{}\"}} {}\n", escape_label(p.model),
                       num(p.stranded_memory_mib * kMiB));
  if (m.repack) {
    header(out, "gpupack_repack_freeable_gpus", "gauge",
           "The most GPUs, beyond those free now, any repack of the running pods could leave wholly free (GPU "
           "milli alone: an upper bound on what defragmentation can win).");
    out += fmt::format("gpupack_repack_freeable_gpus {}\n", num(m.repack->freeable_gpus));
    header(out, "gpupack_size_waste_gpus", "gauge",
           "Free GPU capacity, in GPUs, that the running pods' sizes leave however they are packed.");
    out += fmt::format("gpupack_size_waste_gpus {}\n", num(m.repack->size_waste_gpus));
  }

  std::map<std::string, int> by_reason;
  for (std::string r : {"cpu", "memory", "gpu_milli", "gpu_memory", "mig_slot", "model", "topology", "schedulable"})
    by_reason[r] = 0;
  for (const auto& p : m.pending) ++by_reason[p.reason];
  header(out, "gpupack_pending_pods", "gauge", "Pending GPU pods by the dimension that blocks them.");
  for (const auto& [reason, n] : by_reason)
    out += fmt::format("gpupack_pending_pods{{reason=\"{}\"}} {}\n", escape_label(reason), n);
  // No series per pod (a scrape stays the same size however many pods
  // wait): the oldest per reason, and counts over three ages.
  constexpr std::array<std::pair<const char*, double>, 3> kAges = {{{"1m", 60}, {"10m", 600}, {"1h", 3600}}};
  std::map<std::string, double> oldest;
  std::map<std::string, std::array<int, kAges.size()>> over;
  for (const auto& [reason, n] : by_reason) oldest[reason] = 0, over[reason] = {};
  for (const auto& p : m.pending) {
    oldest[p.reason] = std::max(oldest[p.reason], p.age_seconds);
    for (size_t a = 0; a < kAges.size(); ++a) over[p.reason][a] += p.age_seconds > kAges[a].second ? 1 : 0;
  }
  header(out, "gpupack_oldest_pending_pod_age_seconds", "gauge",
         "Time since gpupack first saw the oldest pending GPU pod of each reason (0 = none pending).");
  for (const auto& [reason, age] : oldest)
    out += fmt::format("gpupack_oldest_pending_pod_age_seconds{{reason=\"{}\"}} {}\n", escape_label(reason), num(age));
  header(out, "gpupack_pending_pods_over_age", "gauge", "Pending GPU pods waiting longer than `age`, by reason.");
  for (const auto& [reason, counts] : over)
    for (size_t a = 0; a < kAges.size(); ++a)
      out += fmt::format("gpupack_pending_pods_over_age{{reason=\"{}\",age=\"{}\"}} {}\n", escape_label(reason),
                         kAges[a].first, counts[a]);

  header(out, "gpupack_decision_duration_seconds", "histogram",
         "Server-side time to answer an extender call (parse, decide, serialise).");
  for (const auto& [verb, s] : latency.snapshot()) {
    uint64_t cum = 0;
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      cum += s.buckets[i];
      out += fmt::format("gpupack_decision_duration_seconds_bucket{{verb=\"{}\",le=\"{}\"}} {}\n", escape_label(verb),
                         num(kLatencyBuckets[i]), cum);
    }
    out += fmt::format("gpupack_decision_duration_seconds_bucket{{verb=\"{}\",le=\"+Inf\"}} {}\n", escape_label(verb),
                       s.count);
    out += fmt::format("gpupack_decision_duration_seconds_sum{{verb=\"{}\"}} {}\n", escape_label(verb), num(s.sum));
    out += fmt::format("gpupack_decision_duration_seconds_count{{verb=\"{}\"}} {}\n", escape_label(verb), s.count);
  }
  header(out, "gpupack_http_requests_total", "counter", "Extender HTTP requests by verb and status code.");
  for (const auto& [key, n] : requests.snapshot())
    out += fmt::format("gpupack_http_requests_total{{verb=\"{}\",code=\"{}\"}} {}\n", escape_label(key.first),
                       key.second, n);
  return out;
}

std::string render_process_metrics() {
  std::string out;
  header(out, "gpupack_build_info", "gauge", "gpupack's version (always 1).");
  out += fmt::format("gpupack_build_info{{version=\"{}\"}} 1\n", kVersion);
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  // /proc/self/stat: fields after the ")" that ends the command name; utime
  // and stime are fields 14 and 15, starttime 22 (clock ticks since boot),
  // rss 24 (pages).
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close != std::string::npos && ticks > 0 && page > 0) {
    std::istringstream f(stat.substr(close + 2));
    std::vector<std::string> fields;
    for (std::string x; f >> x;) fields.push_back(x);
    // fields[0] is field 3 (state).
    if (fields.size() > 21) {
      const double cpu_s = (std::stod(fields[11]) + std::stod(fields[12])) / static_cast<double>(ticks);
      header(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
      out += fmt::format("process_cpu_seconds_total {}\n", num(cpu_s));
      header(out, "process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.");
      out += fmt::format("process_resident_memory_bytes {}\n", std::stoll(fields[21]) * page);
      std::ifstream proc_stat("/proc/stat");
      for (std::string line; std::getline(proc_stat, line);) {
        if (line.rfind("btime ", 0) != 0) continue;
        const double start = std::stod(line.substr(6)) + std::stod(fields[19]) / static_cast<double>(ticks);
        header(out, "process_start_time_seconds", "gauge", "Start time of the process since the epoch, in seconds.");
        out += fmt::format("process_start_time_seconds {}\n", num(start));
      }
    }
  }
  if (const HeapStats heap = heap_stats(); heap.known) {
    header(out, "gpupack_process_heap_in_use_bytes", "gauge",
           "Heap bytes in use by the program (the C library's count, every arena).");
    out += fmt::format("gpupack_process_heap_in_use_bytes {}\n", heap.in_use_bytes);
    header(out, "gpupack_process_heap_free_bytes", "gauge",
           "Heap bytes the C library holds free for reuse (part of the resident memory until released).");
    out += fmt::format("gpupack_process_heap_free_bytes {}\n", heap.free_bytes);
  }
  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  if (!ec && fds > 0) {
    header(out, "process_open_fds", "gauge", "Open file descriptors.");
    out += fmt::format("process_open_fds {}\n", fds);
  }
  return out;
}

}  // namespace gpupack
