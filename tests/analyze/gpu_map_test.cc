// The GPU map's data and page (src/analyze/gpu_map.h); the browser test is
// tests/ui/gpu_map_ui.sh.
#include "analyze/gpu_map.h"

#include <gtest/gtest.h>

#include "analyze/analyze.h"
#include "io/kubectl.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

AnalysisReport planted() {
  // gpu-a: GPUs 0-6 whole, GPU 7 half used (stranded: the pending pod wants
  // a whole GPU); gpu-b empty; mig-a: 2 of 7 1g.10gb devices in use.
  std::vector<K8sNode> nodes = {parse_node(node_json({.name = "gpu-a"})), parse_node(node_json({.name = "gpu-b"})),
                                parse_node(node_json({.name = "mig-a", .gpus = 0, .mig = {{"1g.10gb", 7}}}))};
  std::vector<K8sPod> pods = {
      parse_pod(pod_json({.name = "full", .gpus = 7, .node = "gpu-a", .assigned = "gpu-a:0,1,2,3,4,5,6"})),
      parse_pod(pod_json({.name = "half", .cpu = "1", .gpu_milli = 500, .node = "gpu-a", .assigned = "gpu-a:7@500"})),
      parse_pod(pod_json({.name = "mig0", .mig = {{"1g.10gb", 2}}, .node = "mig-a"})),
      parse_pod(pod_json({.name = "wait", .gpus = 1}))};
  return analyze_cluster(nodes, pods, nullptr);
}

TEST(GpuMap, EveryGpuWithItsPodsAndTheStrandedOneMarked) {
  const json m = planted().gpu_map;
  ASSERT_EQ(m["nodes"].size(), 3u);
  int gpus = 0, stranded = 0;
  for (const json& n : m["nodes"]) {
    for (const json& g : n["gpus"]) {
      ++gpus;
      if (g["stranded"].get<bool>()) {
        ++stranded;
        EXPECT_EQ(n["name"], "gpu-a");
        EXPECT_EQ(g["i"], 7);
      }
    }
  }
  EXPECT_EQ(gpus, 16);
  EXPECT_EQ(stranded, 1);
  EXPECT_EQ(m["cluster"]["stranded_gpus"], 1);
  const json& a = m["nodes"][0];
  EXPECT_EQ(a["name"], "gpu-a");
  EXPECT_EQ(a["gpus"][7]["alloc_milli"], 500);
  ASSERT_EQ(a["gpus"][7]["pods"].size(), 1u);
  EXPECT_EQ(a["gpus"][7]["pods"][0]["name"], "ml/half");
  EXPECT_EQ(a["gpus"][7]["pods"][0]["milli"], 500);
  EXPECT_EQ(a["gpus"][0]["pods"][0]["name"], "ml/full");
  EXPECT_GT(a["frag_milli"].get<double>(), 0) << "the half-free GPU is fragmented for whole-GPU pods";
  const json& mig = m["nodes"][2];
  EXPECT_EQ(mig["gpus"].size(), 0u);
  ASSERT_EQ(mig["mig_devices"].size(), 1u);
  EXPECT_EQ(mig["mig_devices"][0], (json{{"profile", "1g.10gb"}, {"used", 2}, {"total", 7}}));
  EXPECT_EQ(m["cluster"]["pending_pods"], 1);
  EXPECT_EQ(m["cluster"]["gpus"], 16);
  EXPECT_EQ(m["cluster"]["gpu_nodes"], 3);
  EXPECT_EQ(m["cluster"]["nodes_omitted"], 0);
}

TEST(GpuMap, PagesAreSelfContainedAndEscapeTheirData) {
  json data = planted().gpu_map;
  data["nodes"][0]["name"] = "</script><script>alert(1)</script>";
  const std::string report = gpu_map_page("title <b>", &data);
  EXPECT_EQ(report.find("</script><script>alert"), std::string::npos) << "data can end the script element";
  EXPECT_NE(report.find("title &lt;b&gt;"), std::string::npos);
  EXPECT_EQ(report.find("http://"), std::string::npos) << "no external resource";
  EXPECT_EQ(report.find("https://"), std::string::npos) << "no external resource";
  const std::string live = gpu_map_page("live", nullptr, "/ui/state.json", 5);
  EXPECT_NE(live.find("fetch('/ui/state.json'"), std::string::npos);
  EXPECT_NE(live.find("setInterval(tick,5000)"), std::string::npos);
  EXPECT_EQ(live.find("const DATA="), std::string::npos);
}

}  // namespace
}  // namespace gpupack
