// DRA ResourceClaims read from `kubectl get resourceclaims -A -o json` and
// charged to the pods that use them, beside device-plugin GPUs, MIG devices
// and gpupack's own annotations: no GPU is counted twice or left out.
#include "io/pod_resources.h"

#include <gtest/gtest.h>

#include "analyze/analyze.h"
#include "io/kubectl.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

using testing::claim_json;
using testing::pod_with_claims;

TEST(ResourceClaims, ParsesAllocationAndReservationAndThePodsReferences) {
  K8sResourceClaim c = parse_resource_claim(claim_json("ml", "c1", {"gpu-0", "gpu-0-mig-1g10gb-19-0"}, {"job"}));
  EXPECT_EQ(c.key(), "ml/c1");
  EXPECT_TRUE(c.allocated);
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[1].device, "gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(c.devices[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(c.devices[0].pool, "node-a");
  EXPECT_EQ(c.reserved_for, std::vector<std::string>{"job"});
  EXPECT_FALSE(parse_resource_claim(claim_json("ml", "pending", {}, {})).allocated);

  K8sPod p = parse_pod(pod_with_claims({.name = "job", .node = "node-a"}, {"c1"}, {{"train", "job-train-x7k2p"}}));
  EXPECT_EQ(p.resource_claims, (std::vector<std::string>{"c1", "job-train-x7k2p"}));
  // A template whose claim the API has not made yet names nothing.
  json early = pod_with_claims({.name = "early"}, {});
  early["spec"]["resourceClaims"].push_back({{"name", "t"}, {"resourceClaimTemplateName", "tmpl"}});
  EXPECT_TRUE(parse_pod(early).resource_claims.empty());
}

TEST(ResourceClaims, BadClaimsAreErrorsNamingClaimAndField) {
  json c = claim_json("ml", "c1", {"gpu-0"}, {});
  c["status"]["allocation"]["devices"]["results"][0].erase("device");
  try {
    parse_resource_claim(c);
    FAIL() << "a result without a device parsed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ml/c1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("status.allocation.devices.results[0]"), std::string::npos) << e.what();
  }
  std::vector<std::string> rejected;
  const std::string list = json{{"kind", "List"}, {"items", {claim_json("ml", "ok", {"gpu-1"}, {}), c}}}.dump();
  auto claims = parse_resource_claim_list(list, "claims.json", &rejected);
  EXPECT_EQ(claims.size(), 1u);
  EXPECT_EQ(rejected.size(), 1u);
}

TEST(ResourceClaims, DraGpusBecomeWholeGpusWithKnownIdsAndMigDevices) {
  std::vector<K8sPod> pods = {
      parse_pod(pod_with_claims({.name = "full", .cpu = "1", .node = "node-a"}, {"two"})),
      parse_pod(pod_with_claims({.name = "mig", .cpu = "1", .node = "node-b"}, {}, {{"m", "mig-m-abcde"}})),
  };
  std::vector<K8sResourceClaim> claims = {
      parse_resource_claim(claim_json("ml", "two", {"gpu-0", "gpu-3"}, {"full"})),
      parse_resource_claim(
          claim_json("ml", "mig-m-abcde", {"gpu-1-mig-1g10gb-19-2", "gpu-1-mig-1g10gb-19-3"}, {"mig"})),
  };
  EXPECT_TRUE(apply_resource_claims(pods, claims).empty());
  EXPECT_EQ(pods[0].request.gpu_count, 2);
  EXPECT_EQ(pods[0].request.gpu_milli, kGpuMilliPerGpu);
  ASSERT_TRUE(pods[0].assigned.has_value());
  EXPECT_EQ(pods[0].assigned->node, "node-a");
  EXPECT_EQ(pods[0].assigned->gpu_mask, 0b1001u);
  EXPECT_EQ(pods[1].request.gpu_count, 0);
  EXPECT_EQ(pods[1].mig_devices, (std::map<std::string, int64_t>{{"1g.10gb", 2}}));
}

TEST(ResourceClaims, TheExtendedResourceClaimNamesTheIdsOfTheRequestedGpus) {
  json p = pod_with_claims({.name = "ext", .cpu = "1", .gpus = 2, .node = "node-a"}, {"ext-gpu-claim"});
  p["status"]["extendedResourceClaimStatus"] = {{"resourceClaimName", "ext-gpu-claim"},
                                                {"requestMappings", json::array()}};
  std::vector<K8sPod> pods = {parse_pod(p)};
  EXPECT_EQ(pods[0].extended_resource_claim, "ext-gpu-claim");
  std::vector<K8sResourceClaim> claims = {
      parse_resource_claim(claim_json("ml", "ext-gpu-claim", {"gpu-5", "gpu-6"}, {"ext"}))};
  EXPECT_TRUE(apply_resource_claims(pods, claims).empty());
  EXPECT_EQ(pods[0].request.gpu_count, 2);  // not 4: the claim is what the request got
  EXPECT_EQ(pods[0].assigned->gpu_mask, 0b1100000u);
}

TEST(ResourceClaims, WhatCannotBeUsedIsNamedAndTheRestKept) {
  std::vector<K8sPod> pods = {
      parse_pod(pod_with_claims({.name = "a", .cpu = "1", .node = "node-a"}, {"shared", "gone", "odd", "nic"})),
      parse_pod(pod_with_claims({.name = "b", .cpu = "1", .node = "node-a"}, {"shared"})),
      // Device-plugin GPUs (ids unknown) and a DRA GPU: counted together.
      parse_pod(pod_with_claims({.name = "c", .cpu = "1", .gpus = 1, .node = "node-a"}, {"one"})),
  };
  std::vector<K8sResourceClaim> claims = {
      parse_resource_claim(claim_json("ml", "shared", {"gpu-2"}, {"a", "b"})),
      parse_resource_claim(claim_json("ml", "odd", {"gpu-x", "gpu-1-mig-9g.999gb-1-0"}, {"a"})),
      parse_resource_claim(claim_json("ml", "nic", {"eth0"}, {"a"}, "net.example.com")),
      parse_resource_claim(claim_json("ml", "one", {"gpu-7"}, {"c"})),
  };
  const std::vector<std::string> messages = apply_resource_claims(pods, claims);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_NE(messages[0].find("ml/a: ResourceClaim gone is not in the claim list"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("gpu-x"), std::string::npos) << messages[1];
  EXPECT_NE(messages[2].find("9g.999gb"), std::string::npos) << messages[2];
  // The shared claim's GPU is charged once, to the first pod.
  EXPECT_EQ(pods[0].request.gpu_count, 1);
  EXPECT_EQ(pods[0].assigned->gpu_mask, 0b100u);
  EXPECT_EQ(pods[1].request.gpu_count, 0);
  EXPECT_EQ(pods[2].request.gpu_count, 2);
  EXPECT_FALSE(pods[2].assigned.has_value());
}

// A node of 8 GPUs shared by a device-plugin pod (2 GPUs, ids unknown), a
// DRA pod (4 GPUs by claim) and gpupack's own pod (2 GPUs by annotation):
// full, and a ninth GPU is a conflict, never absorbed.
TEST(ResourceClaims, MixedClusterIsChargedWithoutOverCommitInAnalyzeAndFilter) {
  std::vector<json> nodes = {node_json({.name = "node-a", .gpus = 8})};
  std::vector<json> pod_objects = {
      pod_json({.name = "plugin", .cpu = "1", .gpus = 2, .node = "node-a"}),
      pod_with_claims({.name = "dra", .cpu = "1", .node = "node-a"}, {"four"}),
      pod_json({.name = "ours", .cpu = "1", .gpus = 2, .node = "node-a", .assigned = "node-a:4,5"}),
  };
  std::vector<K8sResourceClaim> claims = {
      parse_resource_claim(claim_json("ml", "four", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, {"dra"}))};
  auto parsed = [&](const std::vector<json>& objects) {
    std::vector<K8sPod> pods;
    for (const json& o : objects) pods.push_back(parse_pod(o));
    EXPECT_TRUE(apply_resource_claims(pods, claims).empty());
    return pods;
  };
  std::vector<K8sNode> kn = {parse_node(nodes[0])};
  AnalysisReport r = analyze_cluster(kn, parsed(pod_objects), nullptr);
  EXPECT_EQ(r.conflicts, 0);
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].allocated_milli, 8000);
  // Without the claims the DRA pod's GPUs would be free: 6000 of 8000.
  std::vector<K8sPod> blind;
  for (const json& o : pod_objects) blind.push_back(parse_pod(o));
  EXPECT_EQ(analyze_cluster(kn, blind, nullptr).pools[0].allocated_milli, 4000);

  ExtenderService service("bestfit");
  service.set_cluster(kn, parsed(pod_objects), pod_objects);
  ExtenderArgs a;
  a.pod = pod_json({.name = "want-1", .cpu = "1", .gpus = 1});
  a.node_names = std::vector<std::string>{"node-a"};
  EXPECT_TRUE(service.filter(a).node_names->empty());
  EXPECT_EQ(service.metrics().nodes.at(0).allocated_milli, 8000);

  // One more device-plugin GPU on the node: a conflict, counted and named.
  std::vector<json> more = pod_objects;
  more.push_back(pod_json({.name = "late", .cpu = "1", .gpus = 1, .node = "node-a"}));
  AnalysisReport over = analyze_cluster(kn, parsed(more), nullptr);
  EXPECT_EQ(over.conflicts, 1);
  EXPECT_EQ(over.pools[0].allocated_milli, 8000);
}

}  // namespace
}  // namespace gpupack
