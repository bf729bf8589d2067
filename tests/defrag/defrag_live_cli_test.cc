// gpupack defrag on a live cluster (a fake API server: nodes, pods and
// PodDisruptionBudgets, read through a kubeconfig) and on kubectl JSON files;
// gpupack analyze shows the same plan in words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "support/cli_runner.h"
#include "support/fake_kube_api.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::FakeKubeApi;
using testing::fresh_temp_dir;
using ::testing::HasSubstr;
using testing::list_json;
using testing::node_json;
using ::testing::Not;
using testing::pod_json;
using testing::PodShape;
using testing::run_gpupack;
using testing::RunResult;

// Two 8-GPU nodes, 7 one-GPU pods on each (a-side ones bare, b-side ones
// owned), a pending owned 2-GPU pod, and a budget over the b-side pods.
struct Cluster {
  std::vector<json> nodes{node_json({.name = "a"}), node_json({.name = "b"})};
  std::vector<json> pods;
  FakeKubeApi::Pdb pdb{"ml", "w", {{"app", "w"}}, 0, 0};
  explicit Cluster(int allowed) {
    for (int i = 0; i < 7; ++i) pods.push_back(pod_json({.name = "bare-" + std::to_string(i), .gpus = 1, .node = "a"}));
    for (int i = 0; i < 7; ++i)
      pods.push_back(pod_json(
          {.name = "w-" + std::to_string(i), .gpus = 1, .node = "b", .labels = {{"app", "w"}}, .owner = "rs"}));
    pods.push_back(pod_json({.name = "big", .gpus = 2, .owner = "rs"}));
    pdb.status_allowed = allowed;
  }
};

// The cluster read only: nothing schedules or moves.
struct FakeApi : FakeKubeApi {
  explicit FakeApi(const Cluster& c) : FakeKubeApi(c.nodes, c.pods, {c.pdb}, std::chrono::milliseconds(0), false) {}
};

TEST(DefragLiveCli, PlansALiveClusterMovingOnlyWhatItMay) {
  const std::string dir = fresh_temp_dir("defrag-live");
  {
    // The budget allows one disruption: one owned b-side pod moves to a, and
    // the pending pod fits on b. The bare a-side pods are never moved.
    FakeApi api(Cluster(1));
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json plan = json::parse(r.output.substr(r.output.find('{')));
    EXPECT_EQ(plan["moves"], 1) << r.output;
    EXPECT_EQ(plan["not_admitted"].size(), 0U) << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("bare-"))) << "a pod without a controller was moved";
    const RunResult table = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir));
    EXPECT_THAT(table.output, HasSubstr("7 running GPU pods are held in place"));
    EXPECT_THAT(table.output, HasSubstr("no controller (nothing would recreate it) (7)"));
    const RunResult report = run_gpupack("analyze --kubeconfig " + api.kubeconfig(dir));
    ASSERT_EQ(report.exit_code, 0) << report.output;
    EXPECT_THAT(report.output, HasSubstr("defragmentation (moves that would admit the pending GPU pods)"));
    EXPECT_THAT(report.output, HasSubstr("evict"));
  }
  {
    // The budget allows none: nothing moves, the pending pod stays out.
    FakeApi api(Cluster(0));
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json plan = json::parse(r.output.substr(r.output.find('{')));
    EXPECT_EQ(plan["moves"], 0);
    EXPECT_EQ(plan["not_admitted"].size(), 1U);
  }
}

TEST(DefragLiveCli, PlansFromKubectlFilesAndRejectsTwoSources) {
  const std::string dir = fresh_temp_dir("defrag-files");
  const Cluster c(1);
  std::ofstream(dir + "/nodes.json") << list_json(c.nodes).dump();
  std::ofstream(dir + "/pods.json") << list_json(c.pods).dump();
  std::ofstream(dir + "/pdbs.json") << list_json({FakeKubeApi::pdb_json(c.pdb, c.pdb.status_allowed)}).dump();
  RunResult r = run_gpupack("defrag --nodes " + dir + "/nodes.json --pods " + dir + "/pods.json --pdbs " + dir +
                            "/pdbs.json --format evictions");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"kind\": \"Eviction\""));
  EXPECT_THAT(r.output, HasSubstr("\"namespace\": \"ml\""));
  r = run_gpupack("defrag --state x.json --nodes " + dir + "/nodes.json --pods " + dir + "/pods.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("give one source"));
  r = run_gpupack("defrag --nodes " + dir + "/nodes.json --pods " + dir + "/pods.json --exempt-label nolabel");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--exempt-label 'nolabel': expected KEY=VALUE"));
}

}  // namespace
}  // namespace gpupack
