// GPU topology in the extender: nodes declare NVLink / PCIe / NUMA groups
// with gpupack.io/gpu-topology, pods ask for one group with
// gpupack.io/gpu-scope; filter names "topology" when the free GPUs are enough
// but not in one group, bind picks GPUs of one group.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::NodeShape;
using testing::pod_json;
using testing::PodShape;

constexpr const char* kHgx = "nvlink=0-3|4-7;pcie-switch=0,1|2,3|4,5|6,7;numa=0-3|4-7";

json hgx(const std::string& name, const std::string& topology = kHgx) {
  return node_json({.name = name, .annotations = {{"gpupack.io/gpu-topology", topology}}});
}

std::map<std::string, std::string> scope(const std::string& s, const std::string& policy = "") {
  std::map<std::string, std::string> a = {{"gpupack.io/gpu-scope", s}};
  if (!policy.empty()) a["gpupack.io/gpu-scope-policy"] = policy;
  return a;
}

void load(ExtenderService& svc, const std::vector<json>& nodes, const std::vector<json>& pods) {
  std::vector<K8sNode> n;
  for (const json& j : nodes) n.push_back(parse_node(j));
  std::vector<K8sPod> p;
  for (const json& j : pods) p.push_back(parse_pod(j));
  ASSERT_TRUE(svc.set_cluster(std::move(n), std::move(p), pods).empty());
}

ExtenderArgs names(const json& pod, std::vector<std::string> nodes) {
  ExtenderArgs a;
  a.pod = pod;
  a.node_names = std::move(nodes);
  return a;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// The GPU indices of a gpupack.io/assigned-gpus value.
std::vector<int> gpus_of(const std::string& assigned) {
  std::vector<int> out;
  const GpuAssignmentAnnotation a = parse_assigned_gpus(assigned);
  for (int g = 0; g < 32; ++g)
    if (a.gpu_mask >> g & 1u) out.push_back(g);
  return out;
}

class ExtenderTopology : public ::testing::Test {
 protected:
  void SetUp() override {
    // hgx-0 is empty; hgx-1 has GPUs 0,1 and 4,5 taken: four GPUs free, two
    // per NVLink domain. plain-0 says nothing about its topology; pairs-0
    // has NVLink pairs only.
    nodes_ = {hgx("hgx-0"), hgx("hgx-1"), node_json({.name = "plain-0"}), hgx("pairs-0", "nvlink=0-1|2-3|4-5|6-7")};
    pods_ = {pod_json({.name = "run-a", .gpus = 2, .node = "hgx-1", .assigned = "hgx-1:0,1"}),
             pod_json({.name = "run-b", .gpus = 2, .node = "hgx-1", .assigned = "hgx-1:4,5"})};
    load(svc_, nodes_, pods_);
  }

  std::vector<json> nodes_, pods_;
  ExtenderService svc_{"bestfit"};
};

TEST_F(ExtenderTopology, FilterFailsNodesWhoseFreeGpusAreSplitAcrossDomains) {
  json pod = pod_json({.name = "train", .gpus = 4, .annotations = scope("nvlink")});
  ExtenderFilterResult r = svc_.filter(names(pod, {"hgx-0", "hgx-1", "plain-0", "pairs-0"}));
  ASSERT_EQ(r.error, "");
  ASSERT_TRUE(r.node_names);
  EXPECT_EQ(*r.node_names, std::vector<std::string>{"hgx-0"});
  // Four GPUs free on hgx-1, but two per domain: preemption could help.
  ASSERT_EQ(r.failed_nodes.count("hgx-1"), 1u);
  EXPECT_TRUE(starts_with(r.failed_nodes["hgx-1"], "topology: node hgx-1")) << r.failed_nodes["hgx-1"];
  EXPECT_NE(r.failed_nodes["hgx-1"].find("no nvlink group holds 4 fitting GPUs"), std::string::npos)
      << r.failed_nodes["hgx-1"];
  // A node without topology, or without a domain that large, never can.
  ASSERT_EQ(r.failed_and_unresolvable_nodes.size(), 2u);
  EXPECT_TRUE(starts_with(r.failed_and_unresolvable_nodes["plain-0"],
                          "topology: node plain-0 declares no nvlink groups (gpupack.io/gpu-topology annotation)"))
      << r.failed_and_unresolvable_nodes["plain-0"];
  EXPECT_TRUE(starts_with(r.failed_and_unresolvable_nodes["pairs-0"],
                          "topology: node pairs-0: its largest nvlink group has 2 GPUs, 4 requested"))
      << r.failed_and_unresolvable_nodes["pairs-0"];

  // The same pod without a scope fits everywhere: every node has 4 free GPUs.
  json loose = pod_json({.name = "train-loose", .gpus = 4});
  r = svc_.filter(names(loose, {"hgx-0", "hgx-1", "plain-0", "pairs-0"}));
  EXPECT_EQ(r.node_names->size(), 4u);
  EXPECT_TRUE(r.failed_nodes.empty());
  // A preference never filters.
  json preferring = pod_json({.name = "train-pref", .gpus = 4, .annotations = scope("nvlink", "preferred")});
  r = svc_.filter(names(preferring, {"hgx-0", "hgx-1", "plain-0", "pairs-0"}));
  EXPECT_EQ(r.node_names->size(), 4u);
  // Two GPUs in one domain: hgx-1 has them.
  json pair = pod_json({.name = "pair", .gpus = 2, .annotations = scope("nvlink")});
  r = svc_.filter(names(pair, {"hgx-1", "pairs-0"}));
  EXPECT_EQ(*r.node_names, (std::vector<std::string>{"hgx-1", "pairs-0"}));
}

TEST_F(ExtenderTopology, OtherScopesAndUndeclaredLevels) {
  // NUMA: hgx-1 has GPUs 2,3 free on NUMA 0 and 6,7 on NUMA 1.
  json numa = pod_json({.name = "numa-4", .gpus = 4, .annotations = scope("numa")});
  ExtenderFilterResult r = svc_.filter(names(numa, {"hgx-0", "hgx-1", "pairs-0"}));
  EXPECT_EQ(*r.node_names, std::vector<std::string>{"hgx-0"});
  EXPECT_TRUE(starts_with(r.failed_nodes["hgx-1"], "topology: node hgx-1: no numa group")) << r.failed_nodes["hgx-1"];
  // pairs-0 declares NVLink only: a NUMA requirement cannot be checked there.
  EXPECT_TRUE(starts_with(r.failed_and_unresolvable_nodes["pairs-0"], "topology: node pairs-0 declares no numa groups"))
      << r.failed_and_unresolvable_nodes["pairs-0"];
  // PCIe switches pair the GPUs: two fit under one switch, three never do.
  json two = pod_json({.name = "pcie-2", .gpus = 2, .annotations = scope("pcie-switch")});
  EXPECT_EQ(*svc_.filter(names(two, {"hgx-1"})).node_names, std::vector<std::string>{"hgx-1"});
  json three = pod_json({.name = "pcie-3", .gpus = 3, .annotations = scope("pcie-switch")});
  r = svc_.filter(names(three, {"hgx-0"}));
  EXPECT_TRUE(r.node_names->empty());
  EXPECT_TRUE(starts_with(r.failed_and_unresolvable_nodes["hgx-0"],
                          "topology: node hgx-0: its largest pcie-switch group has 2 GPUs, 3 requested"))
      << r.failed_and_unresolvable_nodes["hgx-0"];
}

TEST_F(ExtenderTopology, GpuMemoryCountsTowardAlignment) {
  // On hgx-0, GPU 0 and GPU 4 hold most of their memory: six GPUs have 500
  // milli and 20000 MiB free, but only three per domain.
  std::vector<json> pods = {
      pod_json(
          {.name = "mem-a", .gpu_milli = 100, .gpu_memory_mib = 70000, .node = "hgx-0", .assigned = "hgx-0:0@100"}),
      pod_json(
          {.name = "mem-b", .gpu_milli = 100, .gpu_memory_mib = 70000, .node = "hgx-0", .assigned = "hgx-0:4@100"})};
  ExtenderService svc("bestfit");
  load(svc, {hgx("hgx-0")}, pods);
  // Four GPUs, 500 milli and 20000 MiB of each.
  json pod =
      pod_json({.name = "infer", .gpus = 4, .gpu_milli = 500, .gpu_memory_mib = 20000, .annotations = scope("nvlink")});
  ExtenderFilterResult r = svc.filter(names(pod, {"hgx-0"}));
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.node_names->empty());
  EXPECT_EQ(r.failed_nodes["hgx-0"], "topology: node hgx-0: no nvlink group holds 4 fitting GPUs");
  // Without the scope the same pod fits (the memory check alone passes).
  pod["metadata"]["annotations"].erase("gpupack.io/gpu-scope");
  pod["metadata"]["name"] = "infer-loose";
  r = svc.filter(names(pod, {"hgx-0"}));
  EXPECT_EQ(*r.node_names, std::vector<std::string>{"hgx-0"});
}

TEST_F(ExtenderTopology, PendingReasonIsTopologyAndPreemptChecksAlignment) {
  json pod = pod_json({.name = "stuck", .gpus = 4, .annotations = scope("nvlink")});
  ExtenderFilterResult r = svc_.filter(names(pod, {"hgx-1", "plain-0"}));
  EXPECT_TRUE(r.node_names->empty());
  bool seen = false;
  for (const auto& p : svc_.metrics().pending) {
    if (p.name == "stuck") {
      EXPECT_EQ(p.reason, "topology");
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
  // Evicting run-a frees domain 0 (GPUs 0-3): enough. Evicting nothing is not.
  ExtenderPreemptionArgs args;
  args.pod = pod;
  args.node_name_to_meta_victims = std::map<std::string, MetaVictims>{{"hgx-1", MetaVictims{{"uid-run-a"}, 0}}};
  std::string err;
  ExtenderPreemptionResult pr = svc_.preempt(args, &err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(pr.node_name_to_meta_victims.count("hgx-1"), 1u);
  args.node_name_to_meta_victims = std::map<std::string, MetaVictims>{{"hgx-1", MetaVictims{{}, 0}}};
  pr = svc_.preempt(args, &err);
  EXPECT_EQ(pr.node_name_to_meta_victims.count("hgx-1"), 0u);
}

TEST_F(ExtenderTopology, BindChoosesGpusOfOneDomain) {
  // Half-used GPUs 0 and 4 (GPU memory given explicitly, so that both halves
  // fit): best fit alone takes {0, 4}, across domains.
  std::vector<json> pods = {
      pod_json({.name = "half-a", .gpu_milli = 500, .gpu_memory_mib = 10000, .node = "n", .assigned = "n:0@500"}),
      pod_json({.name = "half-b", .gpu_milli = 500, .gpu_memory_mib = 10000, .node = "n", .assigned = "n:4@500"})};
  for (bool scoped : {false, true}) {
    ExtenderService svc("bestfit");
    load(svc, {hgx("n", "nvlink=0-3|4-7")}, pods);
    json pod = pod_json({.name = "pair",
                         .gpus = 2,
                         .gpu_milli = 500,
                         .gpu_memory_mib = 10000,
                         .annotations = scoped ? scope("nvlink") : std::map<std::string, std::string>{}});
    ASSERT_EQ(*svc.filter(names(pod, {"n"})).node_names, std::vector<std::string>{"n"});
    ExtenderBindingResult b = svc.bind({"pair", "ml", "uid-pair", "n"});
    ASSERT_EQ(b.error, "");
    const std::string assigned = svc.assignments()["ml/pair"];
    if (!scoped) {
      // The engine keeps a multi-GPU pod in one NVLink domain when it can,
      // even unasked (docs/HARDWARE.md): GPU 0, then the free GPU 1.
      EXPECT_EQ(assigned, "n:0,1@500");
      continue;
    }
    // Best fit inside the domain of GPUs 0-3: the half-used GPU 0, then GPU 1.
    EXPECT_EQ(assigned, "n:0,1@500");
    for (int g : gpus_of(assigned)) EXPECT_LT(g, 4);
    // A restart from the written-back pods rebuilds the aligned assignment.
    ExtenderService restarted("bestfit");
    std::vector<K8sNode> n = {parse_node(hgx("n", "nvlink=0-3|4-7"))};
    EXPECT_TRUE(restarted.set_cluster(n, parse_pod_list(svc.pod_list_json().dump(), "pods")).empty());
    EXPECT_EQ(restarted.assignments(), svc.assignments());
  }
}

TEST_F(ExtenderTopology, PreferredScopeAlignsWhenItCanAndFallsBackWhenNot) {
  // hgx-1 has 2+2 free GPUs: a preferred 4-GPU pod still binds, across domains.
  json four = pod_json({.name = "pref-4", .gpus = 4, .annotations = scope("nvlink", "preferred")});
  ASSERT_EQ(*svc_.filter(names(four, {"hgx-1"})).node_names, std::vector<std::string>{"hgx-1"});
  ASSERT_EQ(svc_.bind({"pref-4", "ml", "uid-pref-4", "hgx-1"}).error, "");
  EXPECT_EQ(svc_.assignments()["ml/pref-4"], "hgx-1:2,3,6,7");
  // Where one domain can hold it, a preferred pod gets one (best fit alone
  // would take the half-used GPUs 0 and 4).
  ExtenderService svc("bestfit");
  load(svc, {hgx("n", "nvlink=0-3|4-7")},
       {pod_json({.name = "half-a", .gpu_milli = 500, .gpu_memory_mib = 10000, .node = "n", .assigned = "n:0@500"}),
        pod_json({.name = "half-b", .gpu_milli = 500, .gpu_memory_mib = 10000, .node = "n", .assigned = "n:4@500"})});
  json two = pod_json({.name = "pref-2",
                       .gpus = 2,
                       .gpu_milli = 500,
                       .gpu_memory_mib = 10000,
                       .annotations = scope("nvlink", "preferred")});
  ASSERT_EQ(*svc.filter(names(two, {"n"})).node_names, std::vector<std::string>{"n"});
  ASSERT_EQ(svc.bind({"pref-2", "ml", "uid-pref-2", "n"}).error, "");
  EXPECT_EQ(svc.assignments()["ml/pref-2"], "n:0,1@500");
}

}  // namespace
}  // namespace gpupack
