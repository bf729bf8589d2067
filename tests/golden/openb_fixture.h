// Shared loading for the openb golden tests: the trace, the published curves
// and the seed-42 replay files, read from shared/traces/openb.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/csv.h"
#include "io/openb.h"
#include "model/workload.h"
#include "sim/curves.h"
#include "sim/experiment.h"
#include "support/shared_data.h"

namespace gpupack::testing {

inline const std::string kOpenbDir = "traces/openb";

struct OpenbTrace {
  std::vector<NodeSpec> nodes;
  Workload pods;  // sorted by name
};

inline OpenbTrace load_openb(const std::string& pod_file) {
  OpenbTrace t;
  t.nodes = read_openb_nodes(shared_path(kOpenbDir + "/openb_node_list_gpu_node.csv"));
  t.pods = to_workload(read_openb_pods(shared_path(kOpenbDir + "/" + pod_file + ".csv")));
  t.pods.sort_by_name();
  return t;
}

// The static experiment of the published curves (seeds 42..51, tune 1.3) on
// `trace`: per policy, in the order given, the mean curve over the seeds.
inline std::vector<Curve> ten_seed_mean_curves(const OpenbTrace& trace, const std::vector<std::string>& policies) {
  ExperimentSpec spec;
  spec.nodes = trace.nodes;
  spec.trace = trace.pods;
  spec.policies = policies;
  for (uint64_t s = 42; s < 52; ++s) spec.seeds.push_back(s);
  spec.tune = 1.3;
  const auto runs = run_experiment(spec);
  std::vector<Curve> means;
  size_t job = 0;
  for (size_t p = 0; p < policies.size(); ++p) {
    std::vector<Curve> curves;
    for (size_t s = 0; s < spec.seeds.size(); ++s) curves.push_back(bucket_curve(runs[job++]));
    means.push_back(mean_curve(curves));
  }
  return means;
}

// workload -> policy name (as in the file, e.g. "FGD") -> values 0..130.
using CurveTable = std::map<std::string, std::map<std::string, std::vector<double>>>;

inline CurveTable load_curve_table(const std::string& rel) {
  const CsvTable t = CsvTable::read(shared_path(rel));
  CurveTable out;
  const int c_work = t.column("workload"), c_pol = t.column("policy"), c0 = t.column("0");
  for (const auto& row : t.rows()) {
    std::vector<double> v;
    for (int k = 0; k <= 130; ++k) v.push_back(std::stod(t.field(row, c0 + k)));
    out[t.field(row, c_work)][t.field(row, c_pol)] = v;
  }
  return out;
}

// Paper policy names as the reference files spell them -> gpupack names.
inline const std::map<std::string, std::string>& paper_policies() {
  static const std::map<std::string, std::string> m = {
      {"Random", "random"},         {"DotProd", "dotprod"}, {"GpuClustering", "gpuclustering"},
      {"GpuPacking", "gpupacking"}, {"BestFit", "bestfit"}, {"FGD", "fgd"}};
  return m;
}

}  // namespace gpupack::testing
