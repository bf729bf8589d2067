#include "io/kubectl.h"
#include "support/k8s_fixtures.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gpupack {
namespace {

using nlohmann::json;

GpuModelId model(const char* name) { return *GpuCatalog::builtin().find(name); }

// Same shapes as `kubectl get nodes -o json` on GPU clusters; values made up.
const char* kNodes = R"({"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"n-h100","labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3",
   "nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"81559","nvidia.com/gpu.replicas":"1",
   "nvidia.com/mig.strategy":"single","topology.kubernetes.io/zone":"z1"}},
  "spec":{"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]},
  "status":{"capacity":{"cpu":"192","memory":"2097152000Ki","nvidia.com/gpu":"8"},
    "allocatable":{"cpu":"191500m","memory":"2096000000Ki","pods":"110","nvidia.com/gpu":"8"},
    "conditions":[{"type":"Ready","status":"True"}]}},
 {"kind":"Node","metadata":{"name":"n-mig","labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3",
   "nvidia.com/gpu.count":"1","nvidia.com/mig.strategy":"mixed","nvidia.com/gpu.replicas":"0"}},
  "spec":{"unschedulable":true},
  "status":{"allocatable":{"cpu":"95500m","memory":"100Gi","nvidia.com/mig-1g.10gb":"2",
    "nvidia.com/mig-2g.20gb":"1","nvidia.com/mig-3g.40gb":"1"},
    "conditions":[{"type":"Ready","status":"False"}]}},
 {"kind":"Node","metadata":{"name":"n-l4-ts","labels":{"nvidia.com/gpu.product":"NVIDIA-L4-SHARED",
   "nvidia.com/gpu.replicas":"4","nvidia.com/gpu.sharing-strategy":"time-slicing"}},
  "status":{"allocatable":{"cpu":"48","memory":"192Gi","nvidia.com/gpu":"16"}}},
 {"kind":"Node","metadata":{"name":"n-t4-renamed","labels":{"nvidia.com/gpu.product":"Tesla-T4",
   "nvidia.com/gpu.replicas":"10","nvidia.com/gpu.sharing-strategy":"mps"}},
  "status":{"capacity":{"cpu":"8","memory":"32G","nvidia.com/gpu.shared":"20"}}},
 {"kind":"Node","metadata":{"name":"n-cpu"},"status":{"allocatable":{"cpu":"4","memory":"8Gi"}}}
]})";

TEST(Kubectl, ParsesNodesWithGfdLabels) {
  auto nodes = parse_node_list(kNodes, "nodes.json");
  ASSERT_EQ(nodes.size(), 5u);
  const K8sNode& h = nodes[0];
  EXPECT_EQ(h.spec.name, "n-h100");
  EXPECT_EQ(h.spec.cpu_milli, 191500);
  EXPECT_EQ(h.spec.memory_mib, 2096000000LL / 1024);
  EXPECT_EQ(h.spec.gpu_count, 8);
  EXPECT_TRUE(h.gpu_model_known);
  EXPECT_EQ(h.spec.gpu_model, model("H100-80GB"));
  EXPECT_EQ(h.gpu_memory_mib, 81559);
  ASSERT_EQ(h.taints.size(), 1u);
  EXPECT_EQ(h.taints[0], (K8sTaint{"nvidia.com/gpu", "present", "NoSchedule"}));
  EXPECT_EQ(h.labels.at("topology.kubernetes.io/zone"), "z1");
  EXPECT_TRUE(h.ready);
  EXPECT_FALSE(h.unschedulable);

  const K8sNode& m = nodes[1];
  EXPECT_EQ(m.spec.gpu_count, 0);  // every GPU is in MIG mode
  EXPECT_EQ(m.mig_devices.at("1g.10gb"), 2);
  EXPECT_EQ(m.mig_devices.at("3g.40gb"), 1);
  EXPECT_EQ(m.gpu_replicas, 1);  // "0" means no sharing config
  EXPECT_EQ(m.mig_strategy, "mixed");
  EXPECT_FALSE(m.ready);
  EXPECT_TRUE(m.unschedulable);
  EXPECT_EQ(m.spec.memory_mib, 100 * 1024);

  const K8sNode& ts = nodes[2];
  EXPECT_EQ(ts.spec.gpu_count, 4);  // 16 replicas / 4
  EXPECT_EQ(ts.gpu_replicas, 4);
  EXPECT_EQ(ts.spec.gpu_model, model("L4"));
  EXPECT_EQ(ts.sharing_strategy, "time-slicing");

  const K8sNode& mps = nodes[3];
  EXPECT_EQ(mps.spec.gpu_count, 2);  // from capacity: 20 shared / 10
  EXPECT_EQ(mps.gpu_shared_resource, 20);
  EXPECT_EQ(mps.spec.gpu_model, model("T4"));
  EXPECT_EQ(mps.spec.memory_mib, 30517);  // 32e9 bytes, rounded down
  EXPECT_EQ(mps.gpu_memory_mib, GpuCatalog::builtin().spec(model("T4")).memory_mib);

  EXPECT_EQ(nodes[4].spec.gpu_count, 0);
  EXPECT_FALSE(nodes[4].gpu_model_known);
}

// Real nvidia.com/gpu.product values (gpu-feature-discovery labels seen on
// public clusters; docs/GPU_CATALOG.md) and the built-in model each must be.
struct ProductCase {
  const char* product;
  const char* model;
};
constexpr ProductCase kKnownProducts[] = {
    {"NVIDIA-A100-SXM4-40GB", "A100-40GB"},
    {"NVIDIA-A100-PCIE-40GB", "A100-40GB"},
    {"A100-SXM4-40GB", "A100-40GB"},  // older drivers: no "NVIDIA " prefix
    {"NVIDIA-A100-SXM4-80GB", "A100-80GB"},
    {"NVIDIA-A100-80GB-PCIe", "A100-80GB-PCIE"},
    {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
    {"NVIDIA-H100-PCIe", "H100-PCIE"},
    {"NVIDIA-H100-NVL", "H100-NVL"},
    {"NVIDIA-H200", "H200"},
    {"NVIDIA-H200-NVL", "H200-NVL"},
    {"NVIDIA-H20", "H20"},
    {"NVIDIA-GH200-480GB", "GH200"},
    {"NVIDIA-B200", "B200"},
    {"NVIDIA-L4", "L4"},
    {"NVIDIA-L40", "L40"},
    {"NVIDIA-L40S", "L40S"},
    {"NVIDIA-A10", "A10"},
    {"NVIDIA-A10G", "A10G"},
    {"NVIDIA-A30", "A30"},
    {"NVIDIA-A40", "A40"},
    {"Tesla-T4", "T4"},
    {"Tesla-P100-PCIE-16GB", "P100"},
    {"Tesla-V100-SXM2-16GB", "V100M16"},
    {"Tesla-V100-PCIE-16GB", "V100M16"},
    {"Tesla-V100-SXM2-32GB", "V100M32"},
    {"Tesla-V100-PCIE-32GB", "V100M32"},
    {"NVIDIA-GeForce-RTX-2080-Ti", "RTX-2080-TI"},
    {"NVIDIA-GeForce-RTX-3090", "RTX-3090"},
    {"NVIDIA-GeForce-RTX-4090", "RTX-4090"},
    {"NVIDIA-GeForce-RTX-5090", "RTX-5090"},
    {"NVIDIA-RTX-A4000", "RTX-A4000"},
    {"NVIDIA-RTX-A5000", "RTX-A5000"},
    {"NVIDIA-RTX-A6000", "RTX-A6000"},
    {"NVIDIA-RTX-6000-Ada-Generation", "RTX-6000-ADA"},
    {"NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition", "RTX-PRO-6000"},
    // Sharing without renaming appends -SHARED; single-strategy MIG appends -MIG-<profile>.
    {"NVIDIA-L4-SHARED", "L4"},
    {"NVIDIA-H100-80GB-HBM3-SHARED", "H100-80GB"},
    {"Tesla-T4-shared", "T4"},
    {"A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-40GB"},
    {"NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "H100-80GB"},
    {"NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "A100-80GB-PCIE"},
    // nvidia-smi spelling and catalog names are accepted too.
    {"NVIDIA H100 80GB HBM3", "H100-80GB"},
    {"nvidia-h200", "H200"},
    {"V100M32", "V100M32"},
    {"G2", "G2"},
};

// Real products outside the catalog, and near misses of catalog names that
// loose matching would have read as another model.
constexpr const char* kUnknownProducts[] = {
    "Quadro-RTX-8000",
    "NVIDIA-TITAN-Xp",
    "NVIDIA-GeForce-GTX-1080-Ti",
    "NVIDIA-RTX-4000-Ada-Generation",
    "Tesla-V100S-PCIE-32GB",
    "NVIDIA-H100",
    "NVIDIA-A100",
    "Tesla-P100",
    "NVIDIA-L4-24GB",
    "NVIDIA-GB200",
    "",
};

TEST(Kubectl, MapsRealGfdProductStringsToTheCatalog) {
  for (const ProductCase& c : kKnownProducts) {
    auto id = find_gpu_model(c.product);
    ASSERT_TRUE(id.has_value()) << c.product;
    EXPECT_EQ(GpuCatalog::builtin().spec(*id).name, c.model) << c.product;
  }
  for (const char* p : kUnknownProducts) EXPECT_FALSE(find_gpu_model(p).has_value()) << p;
}

std::string gpu_node_json(const std::string& name, const std::string& labels, int gpus) {
  return R"({"metadata":{"name":")" + name + R"(","labels":{)" + labels +
         R"(}},"status":{"allocatable":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":")" + std::to_string(gpus) +
         R"("}}})";
}

TEST(Kubectl, EveryRealProductBecomesItsModelOrAnExplicitUnknownPool) {
  const GpuCatalog& cat = GpuCatalog::builtin();
  for (const ProductCase& c : kKnownProducts) {
    K8sNode n =
        parse_node(json::parse(gpu_node_json("k", R"("nvidia.com/gpu.product":")" + std::string(c.product) + "\"", 2)));
    EXPECT_TRUE(n.gpu_model_known) << c.product;
    EXPECT_EQ(cat.spec(n.spec.gpu_model).name, c.model) << c.product;
    EXPECT_TRUE(n.warnings.empty()) << c.product;
  }
  for (const char* p : kUnknownProducts) {
    if (*p == '\0') continue;
    K8sNode n = parse_node(json::parse(gpu_node_json(
        "u", R"("nvidia.com/gpu.product":")" + std::string(p) + R"(","nvidia.com/gpu.memory":"12288")", 4)));
    EXPECT_FALSE(n.gpu_model_known) << p;
    EXPECT_EQ(n.spec.gpu_count, 4) << p;
    ASSERT_TRUE(cat.is_unknown_pool(n.spec.gpu_model)) << p << " became " << cat.spec(n.spec.gpu_model).name;
    EXPECT_EQ(cat.spec(n.spec.gpu_model).name, p);
    EXPECT_EQ(cat.find_unknown_pool(p), n.spec.gpu_model);
    ASSERT_EQ(n.warnings.size(), 1u) << p;
    const std::string& w = n.warnings[0];
    EXPECT_NE(w.find("Node u: metadata.labels[\"nvidia.com/gpu.product\"]"), std::string::npos) << w;
    EXPECT_NE(w.find("\"" + std::string(p) + "\" is not in the catalog"), std::string::npos) << w;
    EXPECT_NE(w.find("own pool"), std::string::npos) << w;
  }
}

TEST(Kubectl, UnknownProductPoolIsSizedFromTheNodeAndSharedByItsNodes) {
  const GpuCatalog& cat = GpuCatalog::builtin();
  std::vector<std::string> rejected, warnings;
  auto nodes = parse_node_list(
      "{\"items\":[" +
          gpu_node_json("a", R"("nvidia.com/gpu.product":"Mystery-GPU-9000","nvidia.com/gpu.memory":"49152")", 2) +
          "," +
          gpu_node_json("b", R"("nvidia.com/gpu.product":"Mystery-GPU-9000-SHARED","nvidia.com/gpu.memory":"49152")",
                        8) +
          "," +
          gpu_node_json("c", R"("nvidia.com/gpu.product":"mystery gpu 9000","nvidia.com/gpu.memory":"40000")", 1) +
          "," + gpu_node_json("d", R"("alibabacloud.com/gpu-card-model":"Mystery-Card")", 1) + "]}",
      "nodes.json", &rejected, &warnings);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_TRUE(rejected.empty());
  const GpuModelId pool = nodes[0].spec.gpu_model;
  ASSERT_TRUE(cat.is_unknown_pool(pool));
  EXPECT_EQ(cat.spec(pool).name, "Mystery-GPU-9000");  // the label, "-SHARED" dropped
  EXPECT_EQ(cat.spec(pool).memory_mib, 49152);         // nvidia.com/gpu.memory, MiB
  EXPECT_EQ(nodes[0].gpu_memory_mib, 49152);
  EXPECT_EQ(nodes[1].spec.gpu_model, pool);
  EXPECT_EQ(nodes[2].spec.gpu_model, pool);
  EXPECT_EQ(nodes[2].gpu_memory_mib, 40000);  // the node keeps its own figure
  EXPECT_NE(nodes[2].warnings.at(0).find("keeps the 49152 MiB"), std::string::npos) << nodes[2].warnings[0];
  // openb's node label names the product when GFD's is absent.
  EXPECT_EQ(cat.spec(nodes[3].spec.gpu_model).name, "Mystery-Card");
  EXPECT_EQ(cat.spec(nodes[3].spec.gpu_model).memory_mib, 0);
  EXPECT_NE(nodes[3].warnings.at(0).find("metadata.labels[\"alibabacloud.com/gpu-card-model\"]"), std::string::npos);
  EXPECT_NE(nodes[3].warnings.at(0).find("GPU memory unknown"), std::string::npos);
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[0].rfind("nodes.json: Node a: ", 0), 0u) << warnings[0];
  // A catalog product never gets a pool, whatever its memory label says.
  EXPECT_FALSE(cat.find_unknown_pool("NVIDIA-L4").has_value());
}

TEST(Kubectl, UnknownProductIsKeptButFlagged) {
  auto nodes = parse_node_list(R"({"items":[{"metadata":{"name":"x","labels":{"nvidia.com/gpu.product":"Mystery-GPU"}},
    "status":{"allocatable":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"2"}}}]})",
                               "t");
  EXPECT_EQ(nodes[0].spec.gpu_count, 2);
  EXPECT_FALSE(nodes[0].gpu_model_known);
  EXPECT_EQ(nodes[0].gpu_product, "Mystery-GPU");
  EXPECT_NE(nodes[0].spec.gpu_model, model("P100"));
  EXPECT_EQ(GpuCatalog::builtin().spec(nodes[0].spec.gpu_model).name, "Mystery-GPU");
}

TEST(Kubectl, GpusWithoutAProductLabelAreAnUnlabeledPool) {
  K8sNode n = parse_node(json::parse(gpu_node_json("bare", R"("kubernetes.io/os":"linux")", 4)));
  EXPECT_FALSE(n.gpu_model_known);
  EXPECT_EQ(GpuCatalog::builtin().spec(n.spec.gpu_model).name, kUnlabeledGpuPool);
  ASSERT_EQ(n.warnings.size(), 1u);
  EXPECT_NE(n.warnings[0].find("no GPU product label"), std::string::npos) << n.warnings[0];
  // No GPUs advertised: no pool, no warning.
  K8sNode idle = parse_node(json::parse(
      R"({"metadata":{"name":"idle","labels":{"nvidia.com/gpu.product":"Idle-Product-X"}},"status":{"allocatable":{"cpu":"8"}}})"));
  EXPECT_EQ(idle.spec.gpu_count, 0);
  EXPECT_TRUE(idle.warnings.empty());
  EXPECT_FALSE(GpuCatalog::builtin().find_unknown_pool("Idle-Product-X").has_value());
}

TEST(Kubectl, RejectedNodeRegistersNoPool) {
  std::vector<std::string> rejected;
  auto nodes = parse_node_list(
      R"({"items":[{"metadata":{"name":"bad","labels":{"nvidia.com/gpu.product":"Rejected-Product-Y"},
        "annotations":{"gpupack.io/gpu-topology":"nvlink=0-9"}},
        "status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"2"}}}]})",
      "nodes.json", &rejected);
  EXPECT_TRUE(nodes.empty());
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_FALSE(GpuCatalog::builtin().find_unknown_pool("Rejected-Product-Y").has_value());
}

const char* kPods = R"({"apiVersion":"v1","kind":"List","items":[
 {"kind":"Pod","metadata":{"name":"train-0","namespace":"ml","uid":"u-1","labels":{"app":"t"},
   "annotations":{"gpupack.io/assigned-gpus":"n-h100:2,5","gpupack.io/gang-name":"job-a",
     "gpupack.io/gang-size":"4","gpupack.io/gpu-models":"H100-80GB, A100-80GB"}},
  "spec":{"schedulerName":"gpupack","nodeName":"n-h100",
    "initContainers":[{"name":"init","resources":{"requests":{"cpu":"20","memory":"1Gi"}}}],
    "containers":[
      {"name":"trainer","resources":{"limits":{"cpu":"16","memory":"128Gi","nvidia.com/gpu":"2"},
                                     "requests":{"cpu":"16","memory":"128Gi","nvidia.com/gpu":"2"}}},
      {"name":"side","resources":{"requests":{"cpu":"500m","memory":"512Mi"}}}]},
  "status":{"phase":"Running"}},
 {"kind":"Pod","metadata":{"name":"infer-0","namespace":"serving"},
  "spec":{"containers":[{"name":"s","resources":{"limits":{"nvidia.com/mig-1g.10gb":"1"}}}]},
  "status":{"phase":"Pending"}},
 {"kind":"Pod","metadata":{"name":"frac","annotations":{"gpupack.io/gpu-milli":"250","gpupack.io/gpu-memory-mib":"20000",
   "gpupack.io/assigned-gpus":"n-h100:7@250"}},
  "spec":{"nodeName":"n-h100","overhead":{"cpu":"100m"},
    "containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1G"}}}]},
  "status":{"phase":"Running"}},
 {"kind":"Pod","metadata":{"name":"ts","namespace":"ml"},
  "spec":{"nodeName":"n-l4-ts","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},
  "status":{"phase":"Running"}},
 {"kind":"Pod","metadata":{"name":"done","namespace":"ml"},
  "spec":{"nodeName":"n-h100","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"8"}}}]},
  "status":{"phase":"Succeeded"}}
]})";

TEST(Kubectl, ParsesPodsSummingContainers) {
  auto pods = parse_pod_list(kPods, "pods.json");
  ASSERT_EQ(pods.size(), 5u);
  const K8sPod& t = pods[0];
  EXPECT_EQ(t.key(), "ml/train-0");
  EXPECT_EQ(t.uid, "u-1");
  EXPECT_EQ(t.node_name, "n-h100");
  EXPECT_EQ(t.phase, "Running");
  EXPECT_EQ(t.scheduler_name, "gpupack");
  EXPECT_EQ(t.labels.at("app"), "t");
  // max(16 + 0.5, init 20) CPUs; memory 128Gi + 512Mi.
  EXPECT_EQ(t.request.cpu_milli, 20000);
  EXPECT_EQ(t.request.memory_mib, 128 * 1024 + 512);
  EXPECT_EQ(t.request.gpu_count, 2);
  EXPECT_EQ(t.request.gpu_milli, 1000);
  EXPECT_EQ(t.request.allowed_models, model_bit(model("H100-80GB")) | model_bit(model("A100-80GB")));
  ASSERT_TRUE(t.gang.has_value());
  EXPECT_EQ(*t.gang, (GangSpec{"job-a", 4, 4, "gpupack.io/gang-name"}));
  ASSERT_TRUE(t.assigned.has_value());
  EXPECT_EQ(t.assigned->gpu_mask, (1u << 2) | (1u << 5));

  const K8sPod& mig = pods[1];
  EXPECT_EQ(mig.key(), "serving/infer-0");
  EXPECT_EQ(mig.request.gpu_count, 0);
  EXPECT_EQ(mig.mig_devices.at("1g.10gb"), 1);  // from limits only
  EXPECT_TRUE(mig.is_mig());

  const K8sPod& f = pods[2];
  EXPECT_EQ(f.namespace_name, "default");
  EXPECT_EQ(f.request.cpu_milli, 1100);  // overhead added
  EXPECT_EQ(f.request.memory_mib, 954);
  EXPECT_EQ(f.request.gpu_count, 1);
  EXPECT_EQ(f.request.gpu_milli, 250);
  EXPECT_EQ(f.gpu_memory_mib, 20000);

  EXPECT_TRUE(pods[4].terminal());
}

K8sPod pod_with_annotations(const std::string& annotations_json) {
  return parse_pod(
      json::parse(R"({"metadata":{"name":"p","namespace":"ns","annotations":{)" + annotations_json +
                  R"(}},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})"));
}

std::string pod_error(const std::string& annotations_json) {
  try {
    pod_with_annotations(annotations_json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Kubectl, PodGroupsOfOtherGangSchedulersAreGangs) {
  // scheduler-plugins' label, Volcano's and KAI-Scheduler's annotations: the
  // group is named, its minimum comes from the PodGroup object.
  const K8sPod coscheduling =
      parse_pod(testing::pod_json({.name = "a", .labels = {{"scheduling.x-k8s.io/pod-group", "pg"}}}));
  ASSERT_TRUE(coscheduling.gang.has_value());
  EXPECT_EQ(*coscheduling.gang, (GangSpec{"pg", 0, 0, "scheduling.x-k8s.io/pod-group"}));
  const K8sPod volcano =
      parse_pod(testing::pod_json({.name = "b", .annotations = {{"scheduling.k8s.io/group-name", "job-1"}}}));
  EXPECT_EQ(*volcano.gang, (GangSpec{"job-1", 0, 0, "scheduling.k8s.io/group-name"}));
  const K8sPod kai = parse_pod(testing::pod_json({.name = "c", .annotations = {{"pod-group-name", "pg-kai"}}}));
  EXPECT_EQ(*kai.gang, (GangSpec{"pg-kai", 0, 0, "pod-group-name"}));
  // gpupack's own annotation wins over another form on the same pod.
  const K8sPod both = parse_pod(testing::pod_json({.name = "d",
                                                   .labels = {{"scheduling.x-k8s.io/pod-group", "pg"}},
                                                   .annotations = {{"gpupack.io/gang-name", "mine"}}}));
  EXPECT_EQ(both.gang->name, "mine");
  EXPECT_THROW(parse_pod(testing::pod_json({.name = "e", .annotations = {{"pod-group-name", " "}}})),
               std::invalid_argument);

  const json groups = {{"apiVersion", "v1"},
                       {"kind", "List"},
                       {"items",
                        {{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                          {"kind", "PodGroup"},
                          {"metadata", {{"name", "pg"}, {"namespace", "ml"}}},
                          {"spec", {{"minMember", 3}}}},
                         {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                          {"kind", "PodGroup"},
                          {"metadata", {{"name", "job-1"}}},
                          {"spec", {{"minMember", 2}, {"queue", "default"}}}}}}};
  const std::vector<K8sPodGroup> g = parse_pod_group_list(groups.dump(), "groups.json");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].key(), "ml/pg");
  EXPECT_EQ(g[0].min_member, 3);
  EXPECT_EQ(g[1].key(), "default/job-1");
  EXPECT_EQ(g[1].min_member, 2);
  for (const json& bad : {json{{"metadata", {{"name", "x"}}}, {"spec", json::object()}},
                          json{{"metadata", {{"name", "x"}}}, {"spec", {{"minMember", 0}}}},
                          json{{"metadata", {{"name", "x"}}}, {"spec", {{"minMember", "2"}}}}}) {
    try {
      parse_pod_group(bad);
      FAIL() << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("spec.minMember"), std::string::npos) << e.what();
    }
  }
}

TEST(Kubectl, PodModelConstraintsAcceptOpenbAnnotationAndLists) {
  const ModelMask v100s = model_bit(model("V100M16")) | model_bit(model("V100M32"));
  // openb writes the pod's allowed models '|'-separated on alibabacloud.com/gpu-card-model.
  EXPECT_EQ(pod_with_annotations(R"("alibabacloud.com/gpu-card-model":"V100M16|V100M32")").request.allowed_models,
            v100s);
  EXPECT_EQ(pod_with_annotations(R"("alibabacloud.com/gpu-card-model":"P100")").request.allowed_models,
            model_bit(model("P100")));
  EXPECT_EQ(pod_with_annotations(R"("gpupack.io/gpu-models":"V100M16|V100M32")").request.allowed_models, v100s);
  EXPECT_EQ(pod_with_annotations(R"("gpupack.io/gpu-models":" V100M16 | V100M32 ")").request.allowed_models, v100s);
  // ',' and '|' mix; product strings name their model.
  EXPECT_EQ(pod_with_annotations(R"("gpupack.io/gpu-models":"A100-80GB,NVIDIA-H100-80GB-HBM3|Tesla-T4")")
                .request.allowed_models,
            model_bit(model("A100-80GB")) | model_bit(model("H100-80GB")) | model_bit(model("T4")));
  // Both given: both must hold.
  EXPECT_EQ(pod_with_annotations(
                R"("gpupack.io/gpu-models":"A100-80GB,V100M32","alibabacloud.com/gpu-card-model":"V100M16|V100M32")")
                .request.allowed_models,
            model_bit(model("V100M32")));
  EXPECT_EQ(pod_with_annotations(R"("gpupack.io/gang-name":"g")").request.allowed_models, 0u);  // no constraint
}

TEST(Kubectl, PodModelConstraintWithAnUnknownNameIsAnError) {
  std::string e = pod_error(R"("alibabacloud.com/gpu-card-model":"V100M16|RTX9090")");
  EXPECT_NE(e.find("Pod ns/p: metadata.annotations[\"alibabacloud.com/gpu-card-model\"]"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown GPU model \"RTX9090\" in \"V100M16|RTX9090\""), std::string::npos) << e;
  EXPECT_NE(e.find("known: P100"), std::string::npos) << e;

  e = pod_error(R"("gpupack.io/gpu-models":"V100M16||V100M32")");
  EXPECT_NE(e.find("metadata.annotations[\"gpupack.io/gpu-models\"]"), std::string::npos) << e;
  EXPECT_NE(e.find("empty model name"), std::string::npos) << e;
  EXPECT_NE(pod_error(R"("gpupack.io/gpu-models":"V100M16|")").find("empty model name"), std::string::npos);
  // A near miss is not a model (no fuzzy match)...
  EXPECT_NE(pod_error(R"("gpupack.io/gpu-models":"H100")").find("unknown GPU model \"H100\""), std::string::npos);
  // ...and neither is an unknown-product pool, even once a node created it.
  parse_node(json::parse(gpu_node_json("q", R"("nvidia.com/gpu.product":"Quadro-RTX-8000")", 1)));
  ASSERT_TRUE(GpuCatalog::builtin().find_unknown_pool("Quadro-RTX-8000").has_value());
  EXPECT_NE(pod_error(R"("gpupack.io/gpu-models":"Quadro-RTX-8000")").find("unknown GPU model \"Quadro-RTX-8000\""),
            std::string::npos);

  e = pod_error(R"("gpupack.io/gpu-models":"A100-80GB","alibabacloud.com/gpu-card-model":"V100M16|V100M32")");
  EXPECT_NE(e.find("allow no model in common"), std::string::npos) << e;
}

TEST(Kubectl, SharedReplicasResolvePerNode) {
  auto nodes = parse_node_list(kNodes, "nodes.json");
  auto pods = parse_pod_list(R"({"items":[{"metadata":{"name":"s"},"spec":{"containers":[{"name":"c",
    "resources":{"limits":{"nvidia.com/gpu.shared":"3"}}}]}}]})",
                             "p");
  EXPECT_EQ(pods[0].shared_replicas, 3);
  EXPECT_EQ(request_on(pods[0], nodes[3]).gpu_milli, 300);   // 3 of 10 replicas
  EXPECT_EQ(request_on(pods[0], nodes[2]).gpu_milli, 750);   // 3 of 4 replicas
  EXPECT_EQ(request_on(pods[0], nodes[0]).gpu_milli, 1000);  // not shared
}

TEST(Kubectl, TraceAnnotationsFromCapturesAreUnderstood) {
  auto pods = parse_pod_list(R"({"items":[{"metadata":{"name":"gpu-pod-00","namespace":"pai-gpu",
    "annotations":{"alibabacloud.com/gpu-count":"1","alibabacloud.com/gpu-milli":"500"}},
    "spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"4","memory":"9Gi"}}}]}}]})",
                             "p");
  EXPECT_EQ(pods[0].request.gpu_count, 1);
  EXPECT_EQ(pods[0].request.gpu_milli, 500);
  EXPECT_EQ(pods[0].request.memory_mib, 9 * 1024);
}

std::string error_of(const std::string& pods_json) {
  try {
    parse_pod_list(pods_json, "pods.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Kubectl, ErrorsNameObjectFieldAndValue) {
  std::string e = error_of(R"({"items":[{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[
    {"name":"c","resources":{"requests":{"cpu":"lots"}}}]}}]})");
  EXPECT_NE(e.find("pods.json: items[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("Pod ns/p"), std::string::npos) << e;
  EXPECT_NE(e.find("spec.containers[0].resources.requests[\"cpu\"]"), std::string::npos) << e;
  EXPECT_NE(e.find("\"lots\""), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p","annotations":{"gpupack.io/gpu-milli":"1500"}},
    "spec":{"containers":[]}}]})");
  EXPECT_NE(e.find("metadata.annotations[\"gpupack.io/gpu-milli\"]"), std::string::npos) << e;
  EXPECT_NE(e.find("\"1500\""), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p","annotations":{"gpupack.io/gpu-models":"H100-80GB,Z9"}},
    "spec":{"containers":[]}}]})");
  EXPECT_NE(e.find("unknown GPU model \"Z9\""), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p"},"spec":{"containers":[
    {"name":"c","resources":{"limits":{"nvidia.com/gpu":"0.5"}}}]}}]})");
  EXPECT_NE(e.find("not a whole number"), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p"},"spec":{"containers":[
    {"name":"c","resources":{"limits":{"nvidia.com/gpu":"64"}}}]}}]})");
  EXPECT_NE(e.find("exceeds"), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p"},"spec":{"containers":{"name":"c"}}}]})");
  EXPECT_NE(e.find("spec.containers: expected an array"), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p","labels":{"a":1}},"spec":{"containers":[]}}]})");
  EXPECT_NE(e.find("metadata.labels[\"a\"]: expected a string, got 1"), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p","annotations":{"gpupack.io/gang-size":"3"}},
    "spec":{"containers":[]}}]})");
  EXPECT_NE(e.find("given without gpupack.io/gang-name"), std::string::npos) << e;

  e = error_of(R"({"items":[{"metadata":{"name":"p","annotations":{"gpupack.io/assigned-gpus":"n:0,0"}},
    "spec":{"containers":[]}}]})");
  EXPECT_NE(e.find("GPU 0 listed twice"), std::string::npos) << e;

  e = error_of(R"({"items": 3})");
  EXPECT_NE(e.find("pods.json: \"items\" is missing or not an array"), std::string::npos) << e;
  e = error_of(R"({"items": [)");
  EXPECT_NE(e.find("pods.json: not valid JSON"), std::string::npos) << e;
  // A number too large for a double is an input error too (found by fuzzing).
  e = error_of(R"({"items": [], "x": 355554e755554})");
  EXPECT_NE(e.find("pods.json: not valid JSON"), std::string::npos) << e;
}

TEST(Kubectl, NodeErrorsNameTheNode) {
  try {
    parse_node_list(R"({"items":[{"metadata":{"name":"bad"},"status":{"allocatable":{"memory":"12Qi"}}}]})", "n.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Node bad: status.allocatable[\"memory\"]: invalid quantity \"12Qi\""),
              std::string::npos)
        << e.what();
  }
  try {
    parse_node_list(R"({"items":[{"metadata":{"name":"ts","labels":{"nvidia.com/gpu.replicas":"3"}},
      "status":{"allocatable":{"nvidia.com/gpu":"10"}}}]})",
                    "n.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple"), std::string::npos) << e.what();
  }
}

// An 8-GPU node with gpupack.io/gpu-topology set to `topology`.
json topo_node(const std::string& topology, int gpus = 8) {
  json n = {{"metadata",
             {{"name", "hgx-0"},
              {"labels", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}},
              {"annotations", {{"gpupack.io/gpu-topology", topology}}}}},
            {"status",
             {{"allocatable", {{"cpu", "129"}, {"memory", "1000001Mi"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  return n;
}

TEST(Kubectl, GpuTopologyAnnotationFillsTheGpuSetup) {
  K8sNode n = parse_node(topo_node("nvlink=0-3|4-7; pcie-switch=0,1|2,3|4,5|6,7 ;numa=0-3|4-7"));
  EXPECT_TRUE(n.declares(GpuScope::kNvlink));
  EXPECT_TRUE(n.declares(GpuScope::kPcieSwitch));
  EXPECT_TRUE(n.declares(GpuScope::kNuma));
  EXPECT_FALSE(n.declares(GpuScope::kAny));
  ASSERT_EQ(n.spec.gpus.size(), 8u);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(n.spec.gpus[g].nvlink_domain, g / 4) << g;
    EXPECT_EQ(n.spec.gpus[g].pcie_switch, g / 2) << g;
    EXPECT_EQ(n.spec.gpus[g].numa, g / 4) << g;
    EXPECT_EQ(n.spec.gpus[g].mode, GpuMode::kShared) << g;
  }
  // Two NUMA nodes sharing the node's CPUs and memory, remainder on the first.
  ASSERT_EQ(n.spec.numa.size(), 2u);
  EXPECT_EQ(n.spec.numa[0].cpu_milli, 64500);
  EXPECT_EQ(n.spec.numa[1].cpu_milli, 64500);
  EXPECT_EQ(n.spec.numa[0].memory_mib, 500001);
  EXPECT_EQ(n.spec.numa[1].memory_mib, 500000);
  // The model accepts the result as a hardware node with those groups.
  ClusterState state({n.spec});
  EXPECT_TRUE(state.has_hardware_setup(NodeId{0}));
  EXPECT_EQ(state.gpu_nvlink_domain(NodeId{0}, 5), 1);
  EXPECT_EQ(state.gpu_pcie_switch(NodeId{0}, 5), 2);
  EXPECT_EQ(state.numa_count(NodeId{0}), 2);

  // Only NVLink, non-contiguous groups, GPUs outside every group.
  K8sNode partial = parse_node(topo_node("nvlink=0,2,4|1,3"));
  EXPECT_TRUE(partial.declares(GpuScope::kNvlink));
  EXPECT_FALSE(partial.declares(GpuScope::kNuma));
  EXPECT_TRUE(partial.spec.numa.empty());
  std::vector<int> ids;
  for (const GpuSetup& g : partial.spec.gpus) ids.push_back(g.nvlink_domain);
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 0, 1, 0, -1, -1, -1}));
  EXPECT_EQ(partial.spec.gpus[7].pcie_switch, -1);
  EXPECT_EQ(partial.spec.gpus[7].numa, 0);

  // No annotation: no hardware setup at all (the openb path stays).
  json plain = topo_node("");
  plain["metadata"].erase("annotations");
  K8sNode p = parse_node(plain);
  EXPECT_EQ(p.gpu_topology_scopes, 0);
  EXPECT_FALSE(p.spec.has_hardware_setup());
}

TEST(Kubectl, MalformedGpuTopologyNamesNodeAnnotationAndProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"nvlink", "is not <level>=<groups>"},
      {"nvlink=0-3|4-7;;numa=0-7", "an empty item"},
      {"nvswitch=0-7", "unknown level \"nvswitch\""},
      {"NVLINK=0-7", "unknown level \"NVLINK\""},
      {"nvlink=0-3;nvlink=4-7", "level nvlink given twice"},
      {"nvlink=", "nvlink: no groups"},
      {"nvlink=0-3||4-7", "nvlink: an empty group"},
      {"nvlink=0-3|4-8", "nvlink: GPU 8 is beyond the node's 8 GPUs (0..7)"},
      {"pcie-switch=0-1|1-2", "pcie-switch: GPU 1 is in more than one group"},
      {"nvlink=3-0", "nvlink: range 3-0 runs backwards"},
      {"nvlink=0-x", "nvlink: \"x\" is not a GPU index"},
      {"nvlink=-1", "nvlink: \"\" is not a GPU index"},
      {"numa=0-3|4-6", "numa: GPU 7 is on no NUMA node"},
  };
  for (const auto& [value, problem] : cases) {
    try {
      parse_node(topo_node(value));
      ADD_FAILURE() << "accepted \"" << value << "\"";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("Node hgx-0: metadata.annotations[\"gpupack.io/gpu-topology\"]: ", 0), 0u) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
    }
  }
  // A node that reports no GPUs right now (say, while the device plugin
  // restarts) stays in the model; its topology applies once GPUs are back.
  K8sNode none = parse_node(topo_node("nvlink=0-3|4-7", 0));
  EXPECT_EQ(none.spec.gpu_count, 0);
  EXPECT_EQ(none.gpu_topology_scopes, 0);
  EXPECT_FALSE(none.spec.has_hardware_setup());
  // In a list, the bad node is rejected and the others kept.
  std::vector<std::string> rejected;
  json list = {{"items", {topo_node("nvlink=0-9"), topo_node("nvlink=0-7")}}};
  list["items"][1]["metadata"]["name"] = "hgx-1";
  auto nodes = parse_node_list(list.dump(), "nodes.json", &rejected);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].spec.name, "hgx-1");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("nodes.json: items[0]: Node hgx-0"), std::string::npos) << rejected[0];
}

TEST(Kubectl, GpuScopeAnnotationsSetTheRequest) {
  auto pod = [](json annotations, const std::string& gpus = "4") {
    json limits = {{"cpu", "8"}};
    if (!gpus.empty()) limits["nvidia.com/gpu"] = gpus;
    return json{{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"annotations", annotations}}},
                {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", limits}}}}}}}}};
  };
  K8sPod p = parse_pod(pod({{"gpupack.io/gpu-scope", "nvlink"}}));
  EXPECT_EQ(p.request.gpu_scope, GpuScope::kNvlink);
  EXPECT_TRUE(p.request.scope_required);
  EXPECT_FALSE(p.request.is_plain());
  p = parse_pod(pod({{"gpupack.io/gpu-scope", " numa "}, {"gpupack.io/gpu-scope-policy", "preferred"}}));
  EXPECT_EQ(p.request.gpu_scope, GpuScope::kNuma);
  EXPECT_FALSE(p.request.scope_required);
  p = parse_pod(pod({{"gpupack.io/gpu-scope", "pcie-switch"}, {"gpupack.io/gpu-scope-policy", "required"}}));
  EXPECT_EQ(p.request.gpu_scope, GpuScope::kPcieSwitch);
  EXPECT_TRUE(p.request.scope_required);
  // A fractional GPU by annotation counts as a GPU request.
  p = parse_pod(pod({{"gpupack.io/gpu-scope", "nvlink"}, {"gpupack.io/gpu-milli", "500"}}, ""));
  EXPECT_EQ(p.request.gpu_count, 1);
  EXPECT_EQ(p.request.gpu_scope, GpuScope::kNvlink);
  // None: plain.
  p = parse_pod(pod(json::object()));
  EXPECT_EQ(p.request.gpu_scope, GpuScope::kAny);
  EXPECT_TRUE(p.request.is_plain());

  struct Bad {
    std::string scope, policy;  // "-" = annotation absent
    std::string key, problem;
  };
  const std::vector<Bad> bad = {
      {"rack", "-", "gpupack.io/gpu-scope", "\"rack\" is not nvlink, pcie-switch or numa"},
      {"any", "-", "gpupack.io/gpu-scope", "\"any\" is not nvlink"},
      {"", "-", "gpupack.io/gpu-scope", "\"\" is not nvlink"},
      {"nvlink", "always", "gpupack.io/gpu-scope-policy", "\"always\" is not required or preferred"},
      {"-", "preferred", "gpupack.io/gpu-scope-policy", "given without gpupack.io/gpu-scope"},
  };
  for (const Bad& b : bad) {
    json ann = json::object();
    if (b.scope != "-") ann["gpupack.io/gpu-scope"] = b.scope;
    if (b.policy != "-") ann["gpupack.io/gpu-scope-policy"] = b.policy;
    const std::string& key = b.key;
    const std::string& problem = b.problem;
    try {
      parse_pod(pod(ann));
      ADD_FAILURE() << ann.dump();
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Pod ml/p: metadata.annotations[\"" + key + "\"]: "), std::string::npos) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
    }
  }
  try {
    parse_pod(pod({{"gpupack.io/gpu-scope", "nvlink"}}, ""));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("applies to pods that request GPUs"), std::string::npos) << e.what();
  }
}

TEST(Kubectl, RejectedItemsAreCollectedWhenAsked) {
  std::vector<std::string> rejected;
  auto pods = parse_pod_list(R"({"items":[{"metadata":{"name":"ok"},"spec":{"containers":[]}},
    {"metadata":{"name":"bad"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"x"}}}]}}]})",
                             "p", &rejected);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].name, "ok");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("Pod default/bad"), std::string::npos);
}

TEST(Kubectl, AssignmentAnnotationFormats) {
  GpuAssignmentAnnotation a{"node-a", 0b1011, 0};
  EXPECT_EQ(format_assigned_gpus(a), "node-a:0,1,3");
  EXPECT_EQ(parse_assigned_gpus("node-a:0,1,3"), a);
  GpuAssignmentAnnotation s{"gpu.node-7", 1u << 31, 125};
  EXPECT_EQ(format_assigned_gpus(s), "gpu.node-7:31@125");
  EXPECT_EQ(parse_assigned_gpus(format_assigned_gpus(s)), s);
  EXPECT_EQ(assigned_gpus_annotation("n", Assignment{NodeId{0}, 0b110, 1000}), "n:1,2");
  for (const char* bad :
       {"", "node", ":0", "n:", "n:32", "n:1,,2", "n:0@0", "n:0@1001", "n:0@", "n:a", "n n:0", "n:-1", "n:0@12345"}) {
    EXPECT_THROW(parse_assigned_gpus(bad), std::invalid_argument) << bad;
  }
}

TEST(Kubectl, RebuildsAssignmentsFromAnnotationsRoundTrip) {
  auto nodes = parse_node_list(kNodes, "nodes.json");
  // Place pods, write the annotations a bind would write, re-read them as
  // JSON (what a restart sees) and rebuild.
  struct Placed {
    const char* name;
    const char* node;
    int gpus;
    int milli;
    Assignment where;
  };
  std::vector<Placed> placed = {
      {"a", "n-h100", 2, 1000, {NodeId{0}, 0b11000, 1000}},
      {"b", "n-h100", 1, 300, {NodeId{0}, 0b1, 300}},
      {"c", "n-h100", 1, 700, {NodeId{0}, 0b1, 700}},
      {"d", "n-t4-renamed", 1, 500, {NodeId{3}, 0b10, 500}},
  };
  json list = {{"items", json::array()}};
  for (const auto& p : placed) {
    json pod = {{"metadata", {{"name", p.name}, {"namespace", "ml"}, {"annotations", json::object()}}},
                {"spec", {{"nodeName", p.node}, {"containers", json::array()}}},
                {"status", {{"phase", "Running"}}}};
    pod["spec"]["containers"].push_back(
        {{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(p.gpus)}}}}}});
    if (p.milli < 1000) pod["metadata"]["annotations"]["gpupack.io/gpu-milli"] = std::to_string(p.milli);
    pod["metadata"]["annotations"]["gpupack.io/assigned-gpus"] = assigned_gpus_annotation(p.node, p.where);
    list["items"].push_back(pod);
  }
  // A CPU-only bound pod and a GPU pod bound by someone else (no annotation).
  list["items"].push_back(json::parse(R"({"metadata":{"name":"cpu"},"spec":{"nodeName":"n-cpu","containers":[
    {"name":"c","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}]}})"));
  list["items"].push_back(json::parse(R"({"metadata":{"name":"foreign"},"spec":{"nodeName":"n-h100","containers":[
    {"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})"));
  list["items"].push_back(
      json::parse(R"({"metadata":{"name":"moved","annotations":{"gpupack.io/assigned-gpus":"n-l4-ts:0"}},
    "spec":{"nodeName":"n-h100","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})"));

  auto pods = parse_pod_list(list.dump(), "pods.json");
  RebuiltState rebuilt = rebuild_assignments(nodes, pods);
  ASSERT_EQ(rebuilt.bound.size(), placed.size() + 1);
  for (size_t i = 0; i < placed.size(); ++i) {
    EXPECT_EQ(rebuilt.bound[i].pod_index, i);
    EXPECT_EQ(rebuilt.bound[i].assignment, placed[i].where) << placed[i].name;
    EXPECT_EQ(rebuilt.bound[i].request.gpu_milli, placed[i].milli);
  }
  EXPECT_EQ(rebuilt.bound[4].assignment, (Assignment{NodeId{4}, 0, 0}));
  ASSERT_EQ(rebuilt.unattributed.size(), 2u);
  EXPECT_NE(rebuilt.unattributed[0].find("default/foreign: no gpupack.io/assigned-gpus"), std::string::npos);
  EXPECT_NE(rebuilt.unattributed[1].find("names node n-l4-ts but the pod is bound to n-h100"), std::string::npos);

  std::vector<NodeSpec> specs;
  for (const auto& n : nodes) specs.push_back(n.spec);
  ClusterState state(specs);
  EXPECT_TRUE(apply_rebuilt(state, pods, rebuilt).empty());
  EXPECT_EQ(state.bound_pod_count(), 5);
  auto free0 = state.gpu_free_milli(NodeId{0});
  EXPECT_EQ(free0[0], 0);  // 300 + 700
  EXPECT_EQ(free0[3], 0);
  EXPECT_EQ(free0[4], 0);
  EXPECT_EQ(free0[1], 1000);
  EXPECT_EQ(state.gpu_free_milli(NodeId{3})[1], 500);
  EXPECT_TRUE(state.check_invariants().empty());
}

TEST(Kubectl, RebuildRejectsAnnotationsThatDoNotMatchTheNode) {
  auto nodes = parse_node_list(kNodes, "nodes.json");
  auto pods = parse_pod_list(R"({"items":[
    {"metadata":{"name":"oob","annotations":{"gpupack.io/assigned-gpus":"n-t4-renamed:5"}},
     "spec":{"nodeName":"n-t4-renamed","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}},
    {"metadata":{"name":"count","annotations":{"gpupack.io/assigned-gpus":"n-h100:0"}},
     "spec":{"nodeName":"n-h100","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}},
    {"metadata":{"name":"milli","annotations":{"gpupack.io/assigned-gpus":"n-h100:0@500","gpupack.io/gpu-milli":"250"}},
     "spec":{"nodeName":"n-h100","containers":[]}}]})",
                             "p");
  RebuiltState r = rebuild_assignments(nodes, pods);
  EXPECT_TRUE(r.bound.empty());
  ASSERT_EQ(r.unattributed.size(), 3u);
  EXPECT_NE(r.unattributed[0].find("beyond the node's 2 GPUs"), std::string::npos) << r.unattributed[0];
  EXPECT_NE(r.unattributed[1].find("names 1 GPUs, the pod requests 2"), std::string::npos) << r.unattributed[1];
  EXPECT_NE(r.unattributed[2].find("charges 500 milli"), std::string::npos) << r.unattributed[2];
}

// parse_rfc3339 itself is tested in tests/server/kubeconfig_test.cc (exec
// credential expiries); here the pod's creationTimestamp.
TEST(Kubectl, CreationTimestampIsReadAndABadOneNamed) {
  json pod = testing::pod_json({.name = "p"});
  pod["metadata"]["creationTimestamp"] = "2026-12-02T07:01:50Z";
  EXPECT_EQ(parse_pod(pod).created_unix_s, 1796194910);
  pod["metadata"]["creationTimestamp"] = "2026-12-02T08:01:50.5+01:00";
  EXPECT_EQ(parse_pod(pod).created_unix_s, 1796194910);
  pod["metadata"]["creationTimestamp"] = "yesterday";
  try {
    parse_pod(pod);
    ADD_FAILURE() << "a bad creationTimestamp was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("metadata.creationTimestamp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpupack
