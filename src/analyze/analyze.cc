#include "analyze/analyze.h"

#include "analyze/gpu_map.h"
#include "util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "analyze/cluster_model.h"
#include "frag/cluster_metrics.h"
#include "io/pod_resources.h"

namespace gpupack {

namespace {

// Workload name: app.kubernetes.io/name or app label, else the pod name
// without a trailing "-<suffix>" of a controller.
std::string workload_of(const K8sPod& p) {
  for (const char* key : {"app.kubernetes.io/name", "app"}) {
    auto it = p.labels.find(key);
    if (it != p.labels.end() && !it->second.empty()) return p.namespace_name + "/" + it->second;
  }
  std::string name = p.name;
  const size_t dash = name.rfind('-');
  if (dash != std::string::npos && dash > 0) name = name.substr(0, dash);
  return p.namespace_name + "/" + name;
}

}  // namespace

AnalysisReport analyze_cluster(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                               const DcgmObservations* dcgm) {
  AnalysisReport r;
  // The same ledger `gpupack serve` keeps: every running pod charged,
  // whoever scheduled it.
  ModeledNodes modeled = model_nodes(nodes);
  const NameIndex& node_index = modeled.index;
  ClusterState state(std::move(modeled.specs));
  ChargeResult charged = charge_running_pods(state, nodes, node_index, pods);
  r.unattributed = std::move(charged.messages);
  r.conflicts = charged.conflicts;
  std::vector<const K8sPod*> all, pending;
  std::set<std::string> seen;
  for (const K8sPod& p : pods) {
    if (p.terminal() || !seen.insert(p.key()).second) continue;
    all.push_back(&p);
    if (p.node_name.empty() && (p.request.is_gpu() || p.is_mig())) pending.push_back(&p);
  }
  const std::shared_ptr<TargetWorkload> target = expected_workload(all, node_index, nodes);
  const ClusterMetrics m = cluster_metrics(state, *target, probe_requests(nodes, pending, *target));
  r.nodes = m.node_count;
  r.bound_pods = m.bound_pods;
  r.gpus = m.gpu_total;
  r.gpus_in_use = m.gpus_in_use;
  r.gpus_free = m.gpu_total - m.gpus_in_use;
  r.repack = repack_bound(m);
  for (const K8sPod* p : pending) ++r.pending_by_reason[pending_reason(state, nodes, *p)];
  {
    std::vector<std::string> names;
    names.reserve(pods.size());
    for (const K8sPod& p : pods) names.push_back(p.key());
    r.gpu_map = gpu_map_json(state, m, names, r.pending_by_reason);
  }

  std::map<std::string, PoolReport> pools;
  std::map<std::string, int> nodes_per_model;
  for (const auto& n : m.nodes) ++nodes_per_model[n.model];
  for (const auto& p : m.pools) {
    PoolReport& pr = pools[p.model];
    pr.model = p.model;
    pr.nodes = nodes_per_model[p.model];
    pr.capacity_milli = p.capacity_milli;
    pr.allocated_milli = p.capacity_milli - p.free_milli;
    pr.fragmentation_milli = p.fragmentation_milli;
    pr.fragmentation_ratio = p.free_milli > 0 ? p.fragmentation_milli / static_cast<double>(p.free_milli) : 0.0;
    pr.stranded_gpus = p.stranded_gpus;
  }
  for (const auto& g : m.gpus) {
    if (pools.count(g.model)) ++pools[g.model].gpus;
    if (!g.stranded) continue;
    StrandedGpu s{g.node, g.gpu, g.model, kGpuMilliPerGpu - g.allocated_milli, g.stranded_memory_mib, false};
    if (dcgm) {
      if (const DcgmGpuObservation* o = dcgm->find_gpu(g.node, g.gpu)) {
        if (auto free = o->metric(dcgm::kFbFree)) {
          s.free_memory_mib = static_cast<int64_t>(*free);
          s.memory_observed = true;
        }
      }
    }
    if (pools.count(g.model)) pools[g.model].stranded_memory_mib += s.free_memory_mib;
    r.stranded.push_back(std::move(s));
  }
  for (auto& [name, p] : pools) r.pools.push_back(std::move(p));

  if (dcgm) {
    std::map<std::string, double> used;  // ns/pod -> largest FB_USED
    for (const DcgmPodObservation& o : dcgm->pods)
      if (auto u = o.metric(dcgm::kFbUsed)) {
        double& v = used[o.namespace_name + "/" + o.pod];
        v = std::max(v, *u);
      }
    std::map<std::string, const K8sNode*> by_name;
    for (const K8sNode& n : nodes) by_name[n.spec.name] = &n;
    for (const K8sPod& p : pods) {
      if (p.node_name.empty() || p.terminal() || !p.request.is_gpu()) continue;
      auto u = used.find(p.key());
      auto n = by_name.find(p.node_name);
      if (u == used.end() || n == by_name.end()) continue;
      const Request req = request_on(p, *n->second);
      const int64_t cap = n->second->gpu_memory_mib;
      int64_t requested =
          p.gpu_memory_mib > 0 ? p.gpu_memory_mib : (cap * req.gpu_milli + kGpuMilliPerGpu - 1) / kGpuMilliPerGpu;
      if (requested <= 0) continue;
      RightSize rs{p.namespace_name,
                   p.name,
                   workload_of(p),
                   p.node_name,
                   requested,
                   static_cast<int64_t>(std::ceil(u->second)),
                   "ok",
                   0};
      const double suggested = std::ceil(rs.observed_mib * 1.2 / 1024.0) * 1024.0;
      rs.suggested_mib = std::max<int64_t>(1024, static_cast<int64_t>(suggested));
      if (rs.observed_mib * 2 < rs.requested_mib)
        rs.advice = "over-sized";
      else if (rs.observed_mib > rs.requested_mib)
        rs.advice = "under-sized";
      else
        rs.suggested_mib = rs.requested_mib;
      r.right_size.push_back(std::move(rs));
    }
  }

  return r;
}

nlohmann::json to_json(const AnalysisReport& r) {
  nlohmann::json j;
  j["nodes"] = r.nodes;
  j["bound_pods"] = r.bound_pods;
  j["pools"] = nlohmann::json::array();
  for (const PoolReport& p : r.pools)
    j["pools"].push_back(
        {{"model", p.model},
         {"nodes", p.nodes},
         {"gpus", p.gpus},
         {"capacity_milli", p.capacity_milli},
         {"allocated_milli", p.allocated_milli},
         {"allocation_ratio", p.capacity_milli > 0 ? double(p.allocated_milli) / p.capacity_milli : 0.0},
         {"fragmentation_milli", p.fragmentation_milli},
         {"fragmentation_ratio", p.fragmentation_ratio},
         {"stranded_gpus", p.stranded_gpus},
         {"stranded_memory_mib", p.stranded_memory_mib}});
  j["stranded"] = nlohmann::json::array();
  for (const StrandedGpu& s : r.stranded)
    j["stranded"].push_back({{"node", s.node},
                             {"gpu", s.gpu},
                             {"model", s.model},
                             {"free_milli", s.free_milli},
                             {"free_memory_mib", s.free_memory_mib},
                             {"memory_observed", s.memory_observed}});
  j["right_size"] = nlohmann::json::array();
  for (const RightSize& s : r.right_size)
    j["right_size"].push_back({{"namespace", s.namespace_name},
                               {"pod", s.pod},
                               {"workload", s.workload},
                               {"node", s.node},
                               {"requested_mib", s.requested_mib},
                               {"observed_mib", s.observed_mib},
                               {"advice", s.advice},
                               {"suggested_mib", s.suggested_mib}});
  j["pending_by_reason"] = r.pending_by_reason;
  j["unattributed"] = r.unattributed;
  j["conflicts"] = r.conflicts;
  j["gpus"] = {{"total", r.gpus}, {"in_use", r.gpus_in_use}, {"free", r.gpus_free}};
  j["repack"] = r.repack ? nlohmann::json{{"freeable_gpus", r.repack->freeable_gpus},
                                          {"size_waste_gpus", r.repack->size_waste_gpus}}
                         : nlohmann::json();
  j["defrag"] = {{"available", r.defrag.available}, {"note", r.defrag.note}, {"plan", r.defrag.plan}};
  return j;
}

std::string format_text(const AnalysisReport& r) {
  std::string out = fmt::format("cluster: {} nodes, {} bound pods\n\n", r.nodes, r.bound_pods);
  out += fmt::format("{:<16} {:>6} {:>6} {:>10} {:>8} {:>12} {:>8} {:>9} {:>14}\n", "pool", "nodes", "gpus",
                     "alloc_gpu", "alloc%", "frag_gpu", "frag%", "stranded", "stranded_mem");
  for (const PoolReport& p : r.pools)
    out += fmt::format(
        "{:<16} {:>6} {:>6} {:>10.2f} {:>7.1f}% {:>12.2f} {:>7.1f}% {:>9} {:>11} MiB\n", p.model, p.nodes, p.gpus,
        p.allocated_milli / 1000.0, p.capacity_milli > 0 ? 100.0 * p.allocated_milli / p.capacity_milli : 0.0,
        p.fragmentation_milli / 1000.0, 100.0 * p.fragmentation_ratio, p.stranded_gpus, p.stranded_memory_mib);
  out += fmt::format("\nGPUs: {} in use, {} wholly free of {}\n", r.gpus_in_use, r.gpus_free, r.gpus);
  if (r.repack)
    out += fmt::format(
        "repack bound (GPU sizes alone): any repack of the running pods frees at most {:.2f} more whole GPUs;\n"
        "  {:.2f} GPUs of the free capacity are left by the pods' sizes however they are packed\n",
        r.repack->freeable_gpus, r.repack->size_waste_gpus);
  out += fmt::format("\nstranded GPUs ({}): free capacity no pending or typical pod can use\n", r.stranded.size());
  for (const StrandedGpu& s : r.stranded)
    out += fmt::format("  {} gpu {} ({}): {} milli, {} MiB free{}\n", s.node, s.gpu, s.model, s.free_milli,
                       s.free_memory_mib, s.memory_observed ? " (observed)" : "");
  if (!r.pending_by_reason.empty()) {
    out += "\npending GPU pods by reason:\n";
    for (const auto& [reason, n] : r.pending_by_reason) out += fmt::format("  {}: {}\n", reason, n);
  }
  out += fmt::format("\nGPU memory, requested vs observed ({} pods with DCGM data):\n", r.right_size.size());
  for (const RightSize& s : r.right_size)
    out += fmt::format("  {}/{} [{}] on {}: requested {} MiB, observed {} MiB: {}{}\n", s.namespace_name, s.pod,
                       s.workload, s.node, s.requested_mib, s.observed_mib, s.advice,
                       s.advice == "ok" ? "" : fmt::format(" (suggest {} MiB)", s.suggested_mib));
  if (!r.unattributed.empty()) {
    out +=
        fmt::format("\nrunning pods gpupack could not charge as their objects say ({}; {} over-commit their node):\n",
                    r.unattributed.size(), r.conflicts);
    for (const std::string& u : r.unattributed) out += "  " + u + "\n";
  }
  if (r.defrag.available) {
    out += "\ndefragmentation (moves that would admit the pending GPU pods):\n" + r.defrag.text;
  } else if (!r.defrag.note.empty()) {
    out += "\ndefragmentation: " + r.defrag.note + "\n";
  }
  return out;
}

std::string format_html(const AnalysisReport& r, const std::string& title) {
  std::string page = gpu_map_page(title, &r.gpu_map);
  const std::string report = "<h2>Report</h2><pre>" + html_escape(format_text(r)) + "</pre>";
  const size_t end = page.rfind("</body>");
  page.insert(end, report);
  return page;
}

}  // namespace gpupack
