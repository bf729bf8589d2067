// gpupack analyze on a generated 100-node snapshot in kubectl shape plus a
// dcgm-exporter scrape: the planted stranded GPUs and the planted over-sized
// request must be found, and nothing else flagged.
#include "analyze/analyze.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::NodeShape;
using testing::PodShape;

struct Snapshot {
  std::vector<json> nodes, pods;
  std::string dcgm;
};

// 60 A100-80GB nodes (8 GPUs) and 40 T4 nodes (4 GPUs). Every GPU is either
// whole-allocated or entirely free, except the planted ones on a100-7:
//  - GPU 5 carries a 900-milli pod: 100 milli left, no pending pod fits;
//  - GPU 6 carries a 500-milli pod that reserved 78,000 MiB of GPU memory: the
//    pending 500-milli pods need 20,000 MiB, so its free share is stranded.
// ml/bert-serve-0 asks for 40,000 MiB and DCGM sees it use 6,000 MiB.
Snapshot make_snapshot() {
  Snapshot s;
  int pod_no = 0;
  std::string dcgm = "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n";
  std::string free_lines =
      "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n# TYPE DCGM_FI_DEV_FB_FREE gauge\n";
  for (int i = 0; i < 100; ++i) {
    const bool a100 = i < 60;
    NodeShape n{(a100 ? "a100-" : "t4-") + std::to_string(a100 ? i : i - 60)};
    if (!a100) n.product = "Tesla-T4", n.gpus = 4, n.cpu = "48", n.memory = "192Gi";
    s.nodes.push_back(testing::node_json(n));
    const int busy = i % 3 == 0 ? n.gpus : n.gpus / 2;  // whole GPUs in use
    for (int g = 0; g < busy; ++g) {
      PodShape p{.name = "train-" + std::to_string(pod_no++),
                 .cpu = "2",
                 .memory = "8Gi",
                 .gpus = 1,
                 .node = n.name,
                 .assigned = n.name + ":" + std::to_string(g)};
      s.pods.push_back(testing::pod_json(p));
    }
  }
  // a100-7 has busy = 4 (GPUs 0..3); plant on GPUs 5 and 6.
  s.pods.push_back(
      testing::pod_json({.name = "tiny-left", .gpu_milli = 900, .node = "a100-7", .assigned = "a100-7:5@900"}));
  s.pods.push_back(testing::pod_json(
      {.name = "mem-hog", .gpu_milli = 500, .gpu_memory_mib = 78000, .node = "a100-7", .assigned = "a100-7:6@500"}));
  // The over-sized request, on a100-8 GPU 4 (free before).
  s.pods.push_back(testing::pod_json({.name = "bert-serve-0",
                                      .gpu_milli = 500,
                                      .gpu_memory_mib = 40000,
                                      .node = "a100-8",
                                      .assigned = "a100-8:4@500",
                                      .labels = {{"app", "bert-serve"}}}));
  // A right-sized one for contrast.
  s.pods.push_back(testing::pod_json({.name = "llm-0", .gpus = 1, .node = "a100-10", .assigned = "a100-10:4"}));
  // Pending pods: half-GPU with 20,000 MiB, and whole GPUs.
  for (int k = 0; k < 3; ++k)
    s.pods.push_back(
        testing::pod_json({.name = "pending-half-" + std::to_string(k), .gpu_milli = 500, .gpu_memory_mib = 20000}));
  s.pods.push_back(testing::pod_json({.name = "pending-whole", .gpus = 2}));

  auto line = [](const std::string& metric, const std::string& host, int gpu, const std::string& pod, double v) {
    std::string labels = "gpu=\"" + std::to_string(gpu) + "\",UUID=\"GPU-" + host + "-" + std::to_string(gpu) +
                         "\",device=\"nvidia" + std::to_string(gpu) +
                         "\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"" + host + "\"";
    if (!pod.empty()) labels += ",container=\"main\",namespace=\"ml\",pod=\"" + pod + "\"";
    return metric + "{" + labels + "} " + std::to_string(v) + "\n";
  };
  dcgm += line("DCGM_FI_DEV_FB_USED", "a100-8", 4, "bert-serve-0", 6000);
  dcgm += line("DCGM_FI_DEV_FB_USED", "a100-10", 4, "llm-0", 70000);
  dcgm += line("DCGM_FI_DEV_FB_USED", "a100-7", 6, "mem-hog", 76000);
  free_lines += line("DCGM_FI_DEV_FB_FREE", "a100-7", 6, "", 4500);
  free_lines += line("DCGM_FI_DEV_FB_FREE", "a100-7", 5, "", 9000);
  s.dcgm = dcgm + free_lines;
  return s;
}

TEST(Analyze, FindsPlantedStrandedMemoryAndOversizedRequest) {
  Snapshot s = make_snapshot();
  auto nodes = parse_node_list(testing::list_json(s.nodes).dump(), "nodes.json");
  auto pods = parse_pod_list(testing::list_json(s.pods).dump(), "pods.json");
  DcgmObservations obs = observe_dcgm(parse_prometheus_text(s.dcgm, "dcgm.txt"), "dcgm.txt");
  AnalysisReport r = analyze_cluster(nodes, pods, &obs);

  EXPECT_EQ(r.nodes, 100);
  EXPECT_TRUE(r.unattributed.empty());
  ASSERT_EQ(r.stranded.size(), 2u) << to_json(r)["stranded"].dump();
  EXPECT_EQ(r.stranded[0].node, "a100-7");
  EXPECT_EQ(r.stranded[0].gpu, 5);
  EXPECT_EQ(r.stranded[0].free_milli, 100);
  EXPECT_EQ(r.stranded[1].gpu, 6);
  EXPECT_EQ(r.stranded[1].free_milli, 500);
  EXPECT_EQ(r.stranded[1].free_memory_mib, 4500);  // DCGM's figure
  EXPECT_TRUE(r.stranded[1].memory_observed);

  ASSERT_EQ(r.pools.size(), 2u);
  const PoolReport& a100 = r.pools[0].model == "A100-80GB" ? r.pools[0] : r.pools[1];
  EXPECT_EQ(a100.nodes, 60);
  EXPECT_EQ(a100.gpus, 480);
  EXPECT_EQ(a100.stranded_gpus, 2);
  EXPECT_EQ(a100.stranded_memory_mib, 9000 + 4500);
  EXPECT_GT(a100.fragmentation_milli, 0);

  const RightSize* bert = nullptr;
  for (const RightSize& x : r.right_size) {
    if (x.pod == "bert-serve-0")
      bert = &x;
    else
      EXPECT_NE(x.advice, "over-sized") << x.pod;
  }
  ASSERT_NE(bert, nullptr);
  EXPECT_EQ(bert->advice, "over-sized");
  EXPECT_EQ(bert->requested_mib, 40000);
  EXPECT_EQ(bert->observed_mib, 6000);
  EXPECT_EQ(bert->suggested_mib, 8192);
  EXPECT_EQ(bert->workload, "ml/bert-serve");
  EXPECT_FALSE(r.defrag.available);
  EXPECT_EQ(r.pending_by_reason.size(), 1u);

  // JSON and text carry the same findings.
  json j = to_json(r);
  EXPECT_EQ(j["stranded"].size(), 2u);
  EXPECT_EQ(j["right_size"].size(), r.right_size.size());
  std::string text = format_text(r);
  EXPECT_NE(text.find("a100-7 gpu 6"), std::string::npos);
  EXPECT_NE(text.find("bert-serve-0"), std::string::npos);
}

TEST(Analyze, CliWritesTextAndJson) {
  Snapshot s = make_snapshot();
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/an_nodes.json") << testing::list_json(s.nodes).dump();
  std::ofstream(dir + "/an_pods.json") << testing::list_json(s.pods).dump();
  std::ofstream(dir + "/an_dcgm.txt") << s.dcgm;
  const std::string base = std::string(GPUPACK_BINARY) + " analyze --nodes " + dir + "/an_nodes.json --pods " + dir +
                           "/an_pods.json --dcgm " + dir + "/an_dcgm.txt";
  ASSERT_EQ(std::system((base + " --format json -o " + dir + "/an_out.json").c_str()), 0);
  std::ifstream in(dir + "/an_out.json");
  json j = json::parse(in);
  EXPECT_EQ(j["stranded"].size(), 2u);
  bool found = false;
  for (const json& x : j["right_size"]) found |= x["pod"] == "bert-serve-0" && x["advice"] == "over-sized";
  EXPECT_TRUE(found);
  // A malformed input fails with the file named and a non-zero exit.
  std::ofstream(dir + "/an_bad.json") << "{\"items\": [42]}";
  FILE* p = popen(
      (std::string(GPUPACK_BINARY) + " analyze --nodes " + dir + "/an_bad.json --pods " + dir + "/an_pods.json 2>&1")
          .c_str(),
      "r");
  char buf[4096];
  std::string out;
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_NE(pclose(p), 0);
  EXPECT_NE(out.find("an_bad.json"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpupack
