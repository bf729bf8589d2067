// gpupack analyze: allocation, fragmentation, stranded capacity and GPU
// memory right-sizing of a cluster from kubectl JSON or the live API (and a
// DCGM scrape).
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "analyze/analyze.h"
#include "analyze/defrag_input.h"
#include "cli/commands.h"
#include "io/dcgm.h"
#include "io/kubectl.h"
#include "io/pod_resources.h"
#include "server/kube_client.h"
#include "server/kubeconfig.h"
#include "util/files.h"

namespace gpupack::cli {
namespace {

struct AnalyzeFlags {
  std::string nodes, pods, claims, pdbs, dcgm, format = "table", out;
  std::string kubeconfig, context;
};

// GET a list from the API; the body goes through the same parser as a file.
std::string api_list(const KubeResponse& r) {
  if (!r.error.empty()) throw std::runtime_error(r.error);
  return r.body;
}

void run_analyze(const AnalyzeFlags& f) {
  std::vector<K8sNode> nodes;
  std::vector<K8sPod> pods;
  std::vector<K8sResourceClaim> claims;
  std::vector<K8sPdb> pdbs;
  std::string pdb_error;  // set when the budgets could not be read: no plan then
  if (!f.nodes.empty() || !f.pods.empty()) {
    if (f.nodes.empty() || f.pods.empty()) throw std::invalid_argument("--nodes and --pods go together");
    if (!f.kubeconfig.empty() || !f.context.empty())
      throw std::invalid_argument("give either --nodes/--pods files or --kubeconfig/--context, not both");
    nodes = read_node_list_file(f.nodes);
    pods = read_pod_list_file(f.pods);
    if (!f.claims.empty()) claims = read_resource_claim_list_file(f.claims);
    if (!f.pdbs.empty()) pdbs = read_pdb_list_file(f.pdbs);
  } else {
    if (!f.claims.empty()) throw std::invalid_argument("--claims goes with --nodes/--pods (the live API lists them)");
    if (!f.pdbs.empty()) throw std::invalid_argument("--pdbs goes with --nodes/--pods (the live API lists them)");
    // No files: the live cluster, found as kubectl finds it.
    KubeConfig cfg = resolve_kube_config({.kubeconfig_path = f.kubeconfig, .context = f.context});
    KubeClient client(cfg, 60);
    nodes = parse_node_list(api_list(client.list_nodes()), "GET " + cfg.server + "/api/v1/nodes");
    pods = parse_pod_list(api_list(client.list_pods()), "GET " + cfg.server + "/api/v1/pods");
    const KubeResponse c = client.list_resource_claims();
    if (c.error.empty()) {
      claims = parse_resource_claim_list(c.body, "GET " + cfg.server + "/apis/resource.k8s.io/v1/resourceclaims");
    } else if (c.status != 404) {  // 404: the cluster does not serve DRA
      fmt::print(stderr, "gpupack analyze: {}; GPUs allocated through DRA are not charged\n", c.error);
    }
    const KubeResponse b = client.list_pdbs();
    if (b.error.empty()) {
      pdbs = parse_pdb_list(b.body, "GET " + cfg.server + "/apis/policy/v1/poddisruptionbudgets");
    } else {
      pdb_error = b.error;
    }
  }
  const std::vector<std::string> claim_notes = apply_resource_claims(pods, claims);
  std::optional<DcgmObservations> obs;
  if (!f.dcgm.empty()) {
    obs = observe_dcgm(parse_prometheus_text(read_file_bounded(f.dcgm), f.dcgm), f.dcgm);
  }
  AnalysisReport r = analyze_cluster(nodes, pods, obs ? &*obs : nullptr);
  if (pdb_error.empty()) {
    r.defrag = plan_admission(nodes, pods, pdbs);
  } else {
    r.defrag.note = "not planned: PodDisruptionBudgets could not be listed (" + pdb_error + ")";
  }
  r.unattributed.insert(r.unattributed.end(), claim_notes.begin(), claim_notes.end());
  const std::string text = f.format == "json"   ? to_json(r).dump(2) + "\n"
                           : f.format == "html" ? format_html(r, "gpupack analyze: GPU map")
                                                : format_text(r);
  if (f.out.empty()) {
    fmt::print("{}", text);
  } else {
    std::ofstream o(f.out);
    if (!o) throw std::runtime_error(fmt::format("{}: cannot open for writing", f.out));
    o << text;
  }
}

}  // namespace

void add_analyze_command(CLI::App& app) {
  auto flags = std::make_shared<AnalyzeFlags>();
  CLI::App* cmd = app.add_subcommand("analyze",
                                     "Report allocation, fragmentation, stranded GPU capacity and GPU "
                                     "memory right-sizing from kubectl JSON or the live API");
  cmd->add_option("--nodes", flags->nodes, "`kubectl get nodes -o json` output (without --nodes/--pods: the live API)");
  cmd->add_option("--pods", flags->pods, "`kubectl get pods -A -o json` output");
  cmd->add_option("--pdbs", flags->pdbs,
                  "`kubectl get pdb -A -o json` output: the defragmentation plan honours these budgets");
  cmd->add_option("--claims", flags->claims,
                  "`kubectl get resourceclaims -A -o json` output: GPUs allocated through DRA are charged");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "read the live cluster with this kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)");
  cmd->add_option("--context", flags->context, "kubeconfig context to use instead of current-context");
  cmd->add_option("--dcgm", flags->dcgm, "a dcgm-exporter /metrics scrape");
  CLI::Option* format =
      cmd->add_option("--format", flags->format,
                      "table, json or html (one self-contained page: the GPU map and the report; default when "
                      "--out ends in .html); 'text' is the same as table")
          ->capture_default_str()
          ->check(CLI::IsMember({"table", "text", "json", "html"}));
  cmd->add_option("-o,--out", flags->out, "write the report here instead of standard output");
  cmd->callback([flags, format] {
    const std::string& out = flags->out;
    if (format->count() == 0 && out.size() > 5 && out.compare(out.size() - 5, 5, ".html") == 0) flags->format = "html";
    run_analyze(*flags);
  });
}

}  // namespace gpupack::cli
