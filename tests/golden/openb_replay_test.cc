// Exact replay of the FGD paper's seed-42 experiment (default trace, tune 1.3)
// with the published arrival order and node tie-break ranks:
// - FGD and BestFit must reproduce every one of the 10,866 placements;
// - DotProd, GpuPacking and GpuClustering must reproduce the published
//   seed-42 allocation curve within 0.05 pp at every arrived % 0..130.
#include <gtest/gtest.h>

#include <cmath>
#include <unordered_map>

#include "golden/openb_fixture.h"
#include "policy/registry.h"
#include "sim/curves.h"
#include "sim/experiment.h"

namespace gpupack::testing {
namespace {

class OpenbSeed42Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUPACK_REQUIRE_SHARED(kOpenbDir + "/seed42/order.csv");
    trace_ = load_openb("openb_pod_list_default");
    std::unordered_map<std::string, int32_t> by_name;
    for (size_t i = 0; i < trace_.pods.size(); ++i) by_name.emplace(trace_.pods.names[i], static_cast<int32_t>(i));
    for (const auto& name : read_arrival_order(shared_path(kOpenbDir + "/seed42/order.csv")))
      order_.push_back(by_name.at(name));
    std::unordered_map<std::string, int64_t> rank_by_node;
    for (const auto& r : read_node_rank(shared_path(kOpenbDir + "/seed42/node_rank.csv")))
      rank_by_node[r.node] = r.rank;
    for (const auto& n : trace_.nodes) rank_.push_back(rank_by_node.at(n.name));
  }

  StaticRunResult replay(const std::string& policy) {
    ExperimentSpec spec;
    spec.nodes = trace_.nodes;
    spec.trace = trace_.pods;
    spec.policies = {policy};
    spec.seeds = {42};
    spec.fixed_order = order_;
    spec.node_rank = rank_;
    spec.threads = 1;
    return run_experiment(spec).at(0);
  }

  void expect_placements(const std::string& policy, const std::string& file) {
    const StaticRunResult run = replay(policy);
    const CsvTable ref = CsvTable::read(shared_path(kOpenbDir + "/seed42/" + file));
    const int c_node = ref.column("node");
    ASSERT_EQ(ref.rows().size(), run.placements.size());
    int mismatches = 0, first = -1;
    for (size_t i = 0; i < run.placements.size(); ++i) {
      const Assignment& a = run.placements[i];
      const std::string got = valid(a.node) ? trace_.nodes[index(a.node)].name : "";
      if (got != ref.field(ref.rows()[i], c_node)) {
        if (first < 0) first = static_cast<int>(i);
        ++mismatches;
      }
    }
    EXPECT_EQ(mismatches, 0) << policy << ": first differing arrival idx " << first;
  }

  OpenbTrace trace_;
  std::vector<int32_t> order_;
  std::vector<int64_t> rank_;
};

TEST_F(OpenbSeed42Replay, FgdReproducesEveryPlacement) { expect_placements("fgd", "fgd_placements.csv"); }

TEST_F(OpenbSeed42Replay, BestFitReproducesEveryPlacement) { expect_placements("bestfit", "bestfit_placements.csv"); }

TEST_F(OpenbSeed42Replay, HeuristicBaselinesReproduceThePublishedSeed42Curves) {
  const CurveTable ref = load_curve_table(kOpenbDir + "/seed42/reference_alloc_curves_seed42.csv");
  for (const char* paper_name : {"DotProd", "GpuPacking", "GpuClustering"}) {
    const std::string policy = paper_policies().at(paper_name);
    const Curve c = bucket_curve(replay(policy));
    const auto& want = ref.at("openb_pod_list_default").at(paper_name);
    double worst = 0;
    int worst_k = 0;
    for (int k = 0; k <= kMaxArrivedPct; ++k) {
      const double diff = std::fabs(c.alloc_pct[k] - want[k]);
      if (diff > worst) worst = diff, worst_k = k;
    }
    EXPECT_LE(worst, 0.05) << paper_name << " differs by " << worst << " pp at " << worst_k << "% arrived";
  }
}

}  // namespace
}  // namespace gpupack::testing
