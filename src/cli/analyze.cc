// gpupack analyze: allocation, fragmentation, stranded capacity and GPU
// memory right-sizing of a cluster from kubectl JSON (and a DCGM scrape).
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "analyze/analyze.h"
#include "cli/commands.h"
#include "io/dcgm.h"
#include "io/kubectl.h"
#include "util/files.h"

namespace gpupack::cli {
namespace {

struct AnalyzeFlags {
  std::string nodes, pods, dcgm, format = "text", out;
};

void run_analyze(const AnalyzeFlags& f) {
  auto nodes = read_node_list_file(f.nodes);
  auto pods = read_pod_list_file(f.pods);
  std::optional<DcgmObservations> obs;
  if (!f.dcgm.empty()) {
    obs = observe_dcgm(parse_prometheus_text(read_file_bounded(f.dcgm), f.dcgm), f.dcgm);
  }
  AnalysisReport r = analyze_cluster(nodes, pods, obs ? &*obs : nullptr);
  const std::string text = f.format == "json" ? to_json(r).dump(2) + "\n" : format_text(r);
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
  CLI::App* cmd = app.add_subcommand("analyze", "Report allocation, fragmentation, stranded GPU capacity and GPU "
                                                "memory right-sizing from kubectl JSON");
  cmd->add_option("--nodes", flags->nodes, "`kubectl get nodes -o json` output")->required();
  cmd->add_option("--pods", flags->pods, "`kubectl get pods -A -o json` output")->required();
  cmd->add_option("--dcgm", flags->dcgm, "a dcgm-exporter /metrics scrape");
  cmd->add_option("--format", flags->format, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--out", flags->out, "write the report here instead of standard output");
  cmd->callback([flags] { run_analyze(*flags); });
}

}  // namespace gpupack::cli
