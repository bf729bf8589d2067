// ExtenderService details not covered by the HTTP tests.
#include "server/extender_service.h"

#include <gtest/gtest.h>

#include <tuple>

#include "io/kubectl.h"
#include "server/metrics.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

// Pods without gpupack.io/gpu-memory-mib are charged their share of the
// GPU's memory; shares that add up to one GPU must fit on it even when the
// memory does not divide evenly (A100-80GB: 81,251 MiB is odd).
TEST(ExtenderService, ImpliedMemorySharesFillOneGpuExactly) {
  ExtenderService service("bestfit");
  std::vector<json> pods = {pod_json({.name = "half-a", .gpu_milli = 500}),
                            pod_json({.name = "half-b", .gpu_milli = 500})};
  std::vector<K8sPod> parsed;
  for (const json& p : pods) parsed.push_back(parse_pod(p));
  service.set_cluster({parse_node(node_json({.name = "one", .gpus = 1}))}, parsed, pods);
  ASSERT_EQ(service.bind(ExtenderBindingArgs{"half-a", "ml", "uid-half-a", "one"}).error, "");
  EXPECT_EQ(service.bind(ExtenderBindingArgs{"half-b", "ml", "uid-half-b", "one"}).error, "");
  EXPECT_EQ(service.assignments().size(), 2u);
}

// Candidates are resolved through the names seen at each position last
// time; a reload that reorders or changes the nodes must not reuse them.
TEST(ExtenderService, CandidateNamesResolveRightAfterTheNodeTableChanges) {
  ExtenderService service("bestfit");
  const json pod = pod_json({.name = "p", .gpus = 1});
  auto load = [&](std::vector<json> nodes) {
    std::vector<K8sNode> parsed;
    for (const json& n : nodes) parsed.push_back(parse_node(n));
    service.set_cluster(parsed, {parse_pod(pod)}, {pod});
  };
  auto passing = [&](std::vector<std::string> names) {
    ExtenderArgs args;
    args.pod = pod;
    args.node_names = std::move(names);
    return service.filter(args).node_names.value_or(std::vector<std::string>{});
  };
  load({node_json({.name = "a", .gpus = 8}), node_json({.name = "b", .gpus = 0})});
  EXPECT_EQ(passing({"a", "b"}), std::vector<std::string>{"a"});
  EXPECT_EQ(passing({"a", "b"}), std::vector<std::string>{"a"});  // through the remembered positions
  // Reloaded in the other order, with the GPUs on the other node.
  load({node_json({.name = "b", .gpus = 8}), node_json({.name = "a", .gpus = 0})});
  EXPECT_EQ(passing({"a", "b"}), std::vector<std::string>{"b"});
  EXPECT_EQ(passing({"b", "a"}), std::vector<std::string>{"b"});       // another order
  EXPECT_EQ(passing({"a", "b", "c"}), std::vector<std::string>{"b"});  // an unknown name stays unknown
}

// Above ServiceOptions::metrics_max_nodes GPU nodes, per-node and per-GPU
// series are left out and counted; the pool and cluster figures stay whole.
TEST(ExtenderService, PerNodeMetricsStopAtTheLimit) {
  auto metrics_with = [](int limit) {
    ServiceOptions o;
    o.metrics_max_nodes = limit;
    ExtenderService service(o);
    const json pod = pod_json({.name = "p", .gpus = 2, .node = "a", .assigned = "a:0,1"});
    const json pending = pod_json({.name = "big", .gpus = 8});  // a's six free GPUs are stranded for it
    service.set_cluster(
        {parse_node(node_json({.name = "a", .gpus = 8})), parse_node(node_json({.name = "b", .gpus = 8})),
         parse_node(node_json({.name = "cpu-only", .gpus = 0}))},
        {parse_pod(pod), parse_pod(pending)}, {pod, pending});
    return service.metrics();
  };
  const ServiceMetrics whole = metrics_with(2), capped = metrics_with(1);
  EXPECT_EQ(whole.gpus.size(), 16u);  // the node without GPUs does not count against the limit
  EXPECT_EQ(whole.nodes.size(), 2u);
  EXPECT_EQ(whole.metrics_nodes_omitted, 0);
  EXPECT_TRUE(capped.gpus.empty());
  EXPECT_TRUE(capped.nodes.empty());
  EXPECT_EQ(capped.metrics_nodes_omitted, 2);
  ASSERT_EQ(capped.pools.size(), whole.pools.size());
  EXPECT_EQ(capped.pools[0].capacity_milli, whole.pools[0].capacity_milli);
  EXPECT_EQ(capped.pools[0].free_milli, whole.pools[0].free_milli);
  EXPECT_EQ(capped.pools[0].stranded_gpus, whole.pools[0].stranded_gpus);
  EXPECT_EQ(capped.pools[0].stranded_memory_mib, whole.pools[0].stranded_memory_mib);
  int64_t per_gpu = 0;  // the pool's stranded memory is its GPUs'
  for (const auto& g : whole.gpus) per_gpu += g.stranded_memory_mib;
  EXPECT_GT(per_gpu, 0);
  EXPECT_EQ(whole.pools[0].stranded_memory_mib, per_gpu);
  EXPECT_EQ(whole.pools[0].stranded_gpus, 6);
  EXPECT_DOUBLE_EQ(capped.cluster_fragmentation_milli, whole.cluster_fragmentation_milli);
  EXPECT_EQ(capped.cluster_free_milli, 14000);
  const std::string text = render_metrics(capped, LatencyHistogram{}, RequestCounters{});
  EXPECT_EQ(text.find("gpupack_gpu_allocated_ratio{"), std::string::npos);
  EXPECT_NE(text.find("gpupack_metrics_nodes_omitted 2"), std::string::npos);
  EXPECT_NE(text.find("gpupack_pool_capacity_gpus{"), std::string::npos);
}

// Every set_cluster() is a whole-model rebuild, counted with its wall time
// (gpupack_model_reloads_total / _seconds_total), across the model swaps.
TEST(ExtenderService, EveryReloadIsCountedWithItsTime) {
  ExtenderService service("fgd");
  EXPECT_EQ(service.metrics().model_reloads, 0u);
  const json pod = pod_json({.name = "p", .gpus = 1});
  for (int i = 0; i < 3; ++i)
    service.set_cluster({parse_node(node_json({.name = "a", .gpus = 8}))}, {parse_pod(pod)}, {pod});
  const ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.model_reloads, 3u);
  EXPECT_GT(m.model_reload_seconds, 0.0);
  EXPECT_LT(m.model_reload_seconds, 10.0);
}

// --score-threads: a NodeNames request over 2,100 distinct nodes is scored
// on two threads, and filter and prioritize answer exactly as on one.
TEST(ExtenderService, ScoreThreadsAnswerAsOneThread) {
  std::vector<K8sNode> nodes;
  std::vector<std::string> names;
  for (int i = 0; i < 2100; ++i) {
    names.push_back("n" + std::to_string(i));
    nodes.push_back(parse_node(
        node_json({.name = names.back(), .gpus = 1 + i % 8, .cpu = std::to_string(16 + i)})));  // all distinct
  }
  const json pod = pod_json({.name = "p", .cpu = "40", .gpus = 2});
  auto answer = [&](int threads, uint64_t* walks) {
    ServiceOptions o;
    o.policy = "fgd";
    o.score_threads = threads;
    ExtenderService service(o);
    service.set_cluster(nodes, {parse_pod(pod)}, {pod});
    ExtenderArgs args;
    args.pod = pod;
    args.node_names = names;
    const ExtenderFilterResult f = service.filter(args);
    std::string error;
    HostPriorityList scores = service.prioritize(args, &error);
    EXPECT_EQ(error, "");
    *walks = service.parallel_walks();
    return std::make_tuple(f.node_names.value_or(std::vector<std::string>{}), f.failed_nodes,
                           f.failed_and_unresolvable_nodes, scores);
  };
  uint64_t one_walks = 0, two_walks = 0;
  const auto one = answer(1, &one_walks);
  const auto two = answer(2, &two_walks);
  EXPECT_EQ(one_walks, 0u);
  EXPECT_GT(two_walks, 0u) << "the request never reached the threads";
  EXPECT_GT(std::get<0>(one).size(), 1000u);  // nodes with 24+ cores and 2+ GPUs pass
  EXPECT_FALSE(std::get<1>(one).empty() && std::get<2>(one).empty());
  EXPECT_EQ(std::get<0>(one), std::get<0>(two));
  EXPECT_EQ(std::get<1>(one), std::get<1>(two));
  EXPECT_EQ(std::get<2>(one), std::get<2>(two));
  EXPECT_EQ(std::get<3>(one), std::get<3>(two));
}

// Above the per-node limit the GPU map draws no node, and its totals (GPUs,
// stranded GPUs) are still the cluster's, with the left-out nodes counted.
TEST(ExtenderService, GpuMapAboveTheLimitKeepsItsTotals) {
  auto map_with = [](int limit) {
    ServiceOptions o;
    o.metrics_max_nodes = limit;
    ExtenderService service(o);
    const json half = pod_json({.name = "half", .cpu = "1", .gpu_milli = 500, .node = "a", .assigned = "a:7@500"});
    const json wait = pod_json({.name = "wait", .gpus = 8});  // only b fits it; a's free GPUs are stranded
    service.set_cluster(
        {parse_node(node_json({.name = "a", .gpus = 8})), parse_node(node_json({.name = "b", .gpus = 8})),
         parse_node(node_json({.name = "cpu-only", .gpus = 0}))},
        {parse_pod(half), parse_pod(wait)}, {half, wait});
    return service.gpu_map();
  };
  const json whole = map_with(5), capped = map_with(1);
  ASSERT_EQ(whole["nodes"].size(), 2u);
  EXPECT_EQ(whole["cluster"]["nodes_omitted"], 0);
  EXPECT_TRUE(capped["nodes"].empty());
  EXPECT_EQ(capped["cluster"]["nodes_omitted"], 2);
  EXPECT_EQ(capped["cluster"]["gpu_nodes"], 2);
  for (const char* key : {"gpus", "stranded_gpus", "capacity_milli", "alloc_milli", "bound_pods", "pending_pods"})
    EXPECT_EQ(capped["cluster"][key], whole["cluster"][key]) << key;
  EXPECT_EQ(capped["cluster"]["gpus"], 16);
  EXPECT_GT(capped["cluster"]["stranded_gpus"].get<int>(), 0);
  EXPECT_EQ(capped["pools"], whole["pools"]);
}

}  // namespace
}  // namespace gpupack
