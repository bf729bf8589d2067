// The extender as an adapter over the engine: the top score is the engine's
// choice, placements are learned whoever binds, and pods placed by other
// schedulers (whole GPUs, shares, MIG devices) are charged without over-commit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "analyze/analyze.h"
#include "io/kubectl.h"
#include "io/pod_resources.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "server/extender_service.h"
#include "server/metrics.h"
#include "support/k8s_fixtures.h"
#include "util/log.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

ExtenderArgs names_args(const json& pod, std::vector<std::string> names) {
  ExtenderArgs a;
  a.pod = pod;
  a.node_names = std::move(names);
  return a;
}

void load(ExtenderService& s, const std::vector<json>& nodes, const std::vector<json>& pods) {
  std::vector<K8sNode> n;
  for (const json& j : nodes) n.push_back(parse_node(j));
  std::vector<K8sPod> p;
  for (const json& j : pods) p.push_back(parse_pod(j));
  s.set_cluster(std::move(n), std::move(p), pods);
}

int score_of(const HostPriorityList& l, const std::string& host) {
  for (const HostPriority& h : l)
    if (h.host == host) return static_cast<int>(h.score);
  return -1;
}

// Eight nodes with different fill; bestfit orders them clearly.
std::vector<json> mixed_nodes() {
  std::vector<json> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(node_json({.name = "n" + std::to_string(i), .gpus = 8}));
  return nodes;
}
std::vector<json> fill_pods() {
  std::vector<json> pods;
  for (int i = 0; i < 8; ++i)
    for (int g = 0; g < i % 5; ++g)
      pods.push_back(pod_json({.name = "run-" + std::to_string(i) + "-" + std::to_string(g),
                               .cpu = "1",
                               .gpus = 1,
                               .node = "n" + std::to_string(i),
                               .assigned = "n" + std::to_string(i) + ":" + std::to_string(g)}));
  return pods;
}

TEST(ExtenderEngine, TheOnlyTenIsTheEnginesChoice) {
  for (const char* policy : {"bestfit", "fgd", "spread"}) {
    ExtenderService service(policy);
    load(service, mixed_nodes(), fill_pods());
    std::vector<std::string> names;
    for (int i = 0; i < 8; ++i) names.push_back("n" + std::to_string(i));
    const json pod = pod_json({.name = "p", .cpu = "1", .gpus = 2});
    const HostPriorityList scores = service.prioritize(names_args(pod, names), nullptr);
    // The engine on the same cluster (the same translation, the same cycle).
    std::vector<NodeSpec> specs;
    std::vector<K8sNode> nodes;
    for (const json& j : mixed_nodes()) nodes.push_back(parse_node(j)), specs.push_back(model_node(nodes.back()));
    ClusterState state(specs);
    std::vector<json> running = fill_pods();
    for (size_t i = 0; i < running.size(); ++i) {
      K8sPod rp = parse_pod(running[i]);
      const int n = rp.node_name[1] - '0';
      ASSERT_TRUE(state
                      .bind(PodId{static_cast<int32_t>(i)}, model_request(rp, nodes[static_cast<size_t>(n)]),
                            Assignment{NodeId{n}, rp.assigned->gpu_mask, 1000})
                      .is_ok());
    }
    // FGD needs the service's target; compare the top only for the others.
    if (std::string(policy) == "fgd") {
      EXPECT_EQ(std::count_if(scores.begin(), scores.end(), [](const HostPriority& h) { return h.score == 10; }), 1);
      continue;
    }
    auto engine_policy = make_policy(policy, {42, nullptr});
    Scheduler sched(*engine_policy);
    const Decision d = sched.decide(state, model_request(parse_pod(pod), nodes[0]));
    ASSERT_TRUE(d.placed());
    const std::string chosen = "n" + std::to_string(index(d.assignment.node));
    EXPECT_EQ(score_of(scores, chosen), 10) << policy;
    EXPECT_EQ(std::count_if(scores.begin(), scores.end(), [](const HostPriority& h) { return h.score == 10; }), 1)
        << policy;
    for (const HostPriority& h : scores) EXPECT_GE(h.score, 1) << policy << " " << h.host;  // all feasible
  }
}

TEST(ExtenderEngine, AssumedPlacementsAreChargedReleasedAndCounted) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.assume_on_prioritize = true;
  o.assume_timeout = std::chrono::milliseconds(200);
  ExtenderService service(o);
  load(service, {node_json({.name = "a", .gpus = 2}), node_json({.name = "b", .gpus = 2})}, {});
  const json p1 = pod_json({.name = "p1", .cpu = "1", .gpus = 2});
  const json p2 = pod_json({.name = "p2", .cpu = "1", .gpus = 2});
  ASSERT_EQ(service.filter(names_args(p1, {"a", "b"})).node_names->size(), 2u);
  HostPriorityList s1 = service.prioritize(names_args(p1, {"a", "b"}), nullptr);
  const std::string top = score_of(s1, "a") == 10 ? "a" : "b";
  EXPECT_EQ(service.placements().at("ml/p1"), top);
  // The next pod sees the assumed placement: only the other node fits.
  ExtenderFilterResult f2 = service.filter(names_args(p2, {"a", "b"}));
  ASSERT_EQ(f2.node_names->size(), 1u);
  EXPECT_NE(f2.node_names->front(), top);
  EXPECT_EQ(service.metrics().assumed_now, 1);
  // p1 filtered again: released.
  service.filter(names_args(p1, {"a", "b"}));
  EXPECT_EQ(service.placements().count("ml/p1"), 0u);
  EXPECT_EQ(service.metrics().placements_expired, 1u);
  // Assumed again, then confirmed by a bind on the same node.
  s1 = service.prioritize(names_args(p1, {"a", "b"}), nullptr);
  const std::string top2 = score_of(s1, "a") == 10 ? "a" : "b";
  EXPECT_EQ(service.bind({"p1", "ml", "uid-p1", top2}).error, "");
  ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.placements_assumed, 2u);
  EXPECT_EQ(m.placements_confirmed, 1u);
  EXPECT_EQ(m.assumed_now, 0);
  // An assumption that nothing confirms expires after the timeout.
  service.prioritize(names_args(p2, {"a", "b"}), nullptr);
  EXPECT_EQ(service.placements().count("ml/p2"), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  service.filter(names_args(pod_json({.name = "other", .cpu = "1"}), {"a"}));
  EXPECT_EQ(service.placements().count("ml/p2"), 0u);
  EXPECT_EQ(service.metrics().placements_expired, 2u);
}

TEST(ExtenderEngine, AssumedPodConfirmedByTheObjects) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.assume_on_prioritize = true;
  ExtenderService service(o);
  std::vector<json> nodes = {node_json({.name = "a", .gpus = 2}), node_json({.name = "b", .gpus = 2})};
  load(service, nodes, {});
  json p1 = pod_json({.name = "p1", .cpu = "1", .gpus = 1});
  HostPriorityList s = service.prioritize(names_args(p1, {"a", "b"}), nullptr);
  const std::string top = score_of(s, "a") == 10 ? "a" : "b";
  // A relist that still shows the pod pending keeps the assumption.
  load(service, nodes, {p1});
  EXPECT_EQ(service.placements().at("ml/p1"), top);
  EXPECT_EQ(service.metrics().assumed_now, 1);
  // The API shows the scheduler's bind (no gpupack annotation).
  json bound = pod_json({.name = "p1", .cpu = "1", .gpus = 1, .node = top});
  load(service, nodes, {bound});
  ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.placements_confirmed, 1u);
  EXPECT_EQ(m.assumed_now, 0);
  EXPECT_EQ(m.bound_pods, 1);
}

TEST(ExtenderEngine, PodsOfOtherSchedulersAreChargedWithoutOverCommit) {
  ExtenderService service("bestfit");
  // n8: a default-scheduled pod holds 2 whole GPUs (no annotation); another
  // holds a shared replica; mig: another scheduler's pod holds 5 of 7 MIG devices.
  std::vector<json> nodes = {
      node_json({.name = "n8", .gpus = 8}),
      node_json({.name = "mig", .gpus = 0, .mig = {{"1g.10gb", 7}}}),
  };
  std::vector<json> pods = {
      pod_json({.name = "default-2", .cpu = "1", .gpus = 2, .node = "n8"}),
      pod_json({.name = "mig-5", .cpu = "1", .mig = {{"1g.10gb", 5}}, .node = "mig"}),
      pod_json({.name = "want-5", .cpu = "1", .gpus = 5}),
  };
  load(service, nodes, pods);
  EXPECT_TRUE(service.unattributed().empty());
  // gpupack binds 2 more on n8: 4 of 8 taken, so 5 no longer fit.
  ASSERT_TRUE(
      service.filter(names_args(pod_json({.name = "mine-2", .cpu = "1", .gpus = 2}), {"n8"})).node_names->size() == 1);
  ASSERT_EQ(service.bind({"mine-2", "ml", "uid-mine-2", "n8"}).error, "");
  ExtenderFilterResult f = service.filter(names_args(pods[2], {"n8"}));
  EXPECT_TRUE(f.node_names->empty());
  ASSERT_TRUE(f.failed_nodes.count("n8"));
  EXPECT_EQ(f.failed_nodes["n8"].rfind("gpu_milli:", 0), 0u) << f.failed_nodes["n8"];
  // The two pods' GPUs do not overlap.
  const std::string mine = service.assignments().at("ml/mine-2");
  EXPECT_EQ(mine, "n8:2,3");
  // MIG: 2 of 7 left.
  EXPECT_TRUE(service.filter(names_args(pod_json({.name = "m3", .cpu = "1", .mig = {{"1g.10gb", 3}}}), {"mig"}))
                  .node_names->empty());
  EXPECT_EQ(service.filter(names_args(pod_json({.name = "m2", .cpu = "1", .mig = {{"1g.10gb", 2}}}), {"mig"}))
                .node_names->size(),
            1u);
  ServiceMetrics m = service.metrics();
  int64_t n8 = -1;
  for (const auto& node : m.nodes)
    if (node.name == "n8") n8 = node.allocated_milli;
  EXPECT_EQ(n8, 4000);
  for (const auto& node : m.nodes) {
    if (node.name == "mig") {
      EXPECT_EQ(node.mig.at("1g.10gb"), (std::pair<int64_t, int64_t>{5, 7}));
    }
  }
  EXPECT_EQ(m.charge_conflicts, 0u);
}

TEST(ExtenderEngine, MoreGpusClaimedThanANodeHasIsAConflictNotAbsorbed) {
  ExtenderService service("bestfit");
  std::vector<json> pods = {pod_json({.name = "a", .cpu = "1", .gpus = 6, .node = "n"}),
                            pod_json({.name = "b", .cpu = "1", .gpus = 4, .node = "n"})};
  load(service, {node_json({.name = "n", .gpus = 8})}, pods);
  ASSERT_EQ(service.unattributed().size(), 1u);
  EXPECT_NE(service.unattributed()[0].find("ml/b: over-committed on node n"), std::string::npos)
      << service.unattributed()[0];
  ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.charge_conflicts, 1u);
  EXPECT_EQ(m.nodes.at(0).allocated_milli, 6000);  // never above capacity

  // analyze reports the same true allocation and the conflict.
  std::vector<K8sPod> parsed;
  for (const json& p : pods) parsed.push_back(parse_pod(p));
  AnalysisReport r = analyze_cluster({parse_node(node_json({.name = "n", .gpus = 8}))}, parsed, nullptr);
  EXPECT_EQ(r.bound_pods, 1);
  EXPECT_EQ(r.conflicts, 1);
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].allocated_milli, 6000);
}

TEST(ExtenderEngine, AnalyzeChargesAClusterGpupackNeverScheduled) {
  std::vector<K8sNode> nodes = {parse_node(node_json({.name = "x", .gpus = 8})),
                                parse_node(node_json({.name = "y", .gpus = 8}))};
  std::vector<K8sPod> pods = {parse_pod(pod_json({.name = "a", .cpu = "1", .gpus = 4, .node = "x"})),
                              parse_pod(pod_json({.name = "b", .cpu = "1", .gpus = 8, .node = "y"})),
                              parse_pod(pod_json({.name = "c", .cpu = "1", .gpu_milli = 500, .node = "x"}))};
  AnalysisReport r = analyze_cluster(nodes, pods, nullptr);
  EXPECT_EQ(r.bound_pods, 3);
  EXPECT_EQ(r.conflicts, 0);
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].allocated_milli, 12500);
}

// The repack bound on /metrics and in analyze: three halves on three GPUs
// pack onto 1.5, so 1.5 GPUs are freeable; it follows the pods as they
// change, and is left out where a pod's charge depends on its GPU.
TEST(ExtenderEngine, RepackBoundFollowsThePodsOnMetricsAndInAnalyze) {
  const json node = node_json({.name = "n", .gpus = 8});
  std::vector<json> pods;
  for (int g = 0; g < 3; ++g)
    pods.push_back(pod_json({.name = fmt::format("h{}", g),
                             .cpu = "1",
                             .gpu_milli = 500,
                             .node = "n",
                             .assigned = fmt::format("n:{}@500", g)}));
  ExtenderService service("fgd");
  load(service, {node}, pods);
  ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.gpus_in_use, 3);
  ASSERT_TRUE(m.repack.has_value());
  EXPECT_NEAR(m.repack->freeable_gpus, 1.5, 1e-6);
  EXPECT_NEAR(m.repack->size_waste_gpus, 0.0, 1e-6);
  const std::string text = render_metrics(m, LatencyHistogram{}, RequestCounters{});
  EXPECT_NE(text.find("\ngpupack_repack_freeable_gpus 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngpupack_size_waste_gpus 0\n"), std::string::npos) << text;

  // The same three halves on two GPUs: the LP's result is kept (same items),
  // the freeable GPUs follow the GPUs in use.
  std::vector<json> packed = pods;
  packed[2] = pod_json({.name = "h2", .cpu = "1", .gpu_milli = 500, .node = "n", .assigned = "n:0@500"});
  load(service, {node}, packed);
  m = service.metrics();
  EXPECT_EQ(m.gpus_in_use, 2);
  ASSERT_TRUE(m.repack.has_value());
  EXPECT_NEAR(m.repack->freeable_gpus, 0.5, 1e-6);

  // A fourth half on GPU 0 (more of the same size): 1 GPU freeable.
  pods.push_back(pod_json({.name = "h3", .cpu = "1", .gpu_milli = 500, .node = "n", .assigned = "n:0@500"}));
  load(service, {node}, pods);
  m = service.metrics();
  ASSERT_TRUE(m.repack.has_value());
  EXPECT_NEAR(m.repack->freeable_gpus, 1.0, 1e-6);
  // A 700 on GPU 3: it shares with nothing, 300 milli of waste.
  pods.push_back(pod_json({.name = "s", .cpu = "1", .gpu_milli = 700, .node = "n", .assigned = "n:3@700"}));
  load(service, {node}, pods);
  m = service.metrics();
  ASSERT_TRUE(m.repack.has_value());
  EXPECT_NEAR(m.repack->freeable_gpus, 1.0, 1e-6);
  EXPECT_NEAR(m.repack->size_waste_gpus, 0.3, 1e-6);

  std::vector<K8sPod> parsed;
  for (const json& p : pods) parsed.push_back(parse_pod(p));
  const AnalysisReport r = analyze_cluster({parse_node(node)}, parsed, nullptr);
  EXPECT_EQ(r.gpus_in_use, 4);
  EXPECT_EQ(r.gpus_free, 4);
  ASSERT_TRUE(r.repack.has_value());
  EXPECT_NEAR(r.repack->freeable_gpus, 1.0, 1e-6);
  EXPECT_NEAR(to_json(r)["repack"]["size_waste_gpus"].get<double>(), 0.3, 1e-6);
  EXPECT_NE(format_text(r).find("frees at most 1.00 more whole GPUs"), std::string::npos) << format_text(r);

  // A pod on advertised MIG devices: no bound, and the series are left out.
  pods.push_back(pod_json({.name = "m", .cpu = "1", .mig = {{"1g.10gb", 1}}, .node = "mig"}));
  const json mig = node_json({.name = "mig", .gpus = 0, .mig = {{"1g.10gb", 7}}});
  load(service, {node, mig}, pods);
  m = service.metrics();
  EXPECT_EQ(m.bound_pods, 6);
  EXPECT_FALSE(m.repack.has_value());
  EXPECT_EQ(render_metrics(m, LatencyHistogram{}, RequestCounters{}).find("gpupack_repack_freeable_gpus"),
            std::string::npos);
  parsed.clear();
  for (const json& p : pods) parsed.push_back(parse_pod(p));
  const AnalysisReport none = analyze_cluster({parse_node(node), parse_node(mig)}, parsed, nullptr);
  EXPECT_FALSE(none.repack.has_value());
  EXPECT_TRUE(to_json(none)["repack"].is_null());
}

TEST(ExtenderEngine, LegacyFailedNodesListsUnresolvableNodes) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.legacy_failed_nodes = true;
  ExtenderService service(o);
  load(service, {node_json({.name = "t4", .product = "Tesla-T4", .gpus = 4})}, {});
  ExtenderFilterResult f = service.filter(names_args(pod_json({.name = "p", .gpus = 6}), {"t4", "ghost"}));
  EXPECT_TRUE(f.failed_and_unresolvable_nodes.empty());
  EXPECT_EQ(f.failed_nodes.size(), 2u);
  EXPECT_TRUE(f.failed_nodes.count("ghost"));
}

TEST(ExtenderEngine, PodLevelErrorsAreTheReplysErrorAndPrioritizeScoresZero) {
  ExtenderService service("bestfit");
  load(service, {node_json({.name = "a"})}, {});
  json odd = pod_json({.name = "odd", .extra_limits = {{"nvidia.com/gpumem", "4000"}}});
  ExtenderFilterResult f = service.filter(names_args(odd, {"a"}));
  EXPECT_NE(f.error.find("nvidia.com/gpumem"), std::string::npos);
  std::string error;
  HostPriorityList p = service.prioritize(names_args(odd, {"a"}), &error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].score, 0);
}

// At --log-level debug each decision is one line: the pod, what passed
// filter, the node and GPUs prioritize chose, what bind did.
TEST(ExtenderEngine, DebugLogHasOneLinePerDecision) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  set_log_sink(f);
  set_log_level(LogLevel::kDebug);
  ExtenderService service("bestfit");
  load(service, {node_json({.name = "a", .gpus = 8}), node_json({.name = "b", .gpus = 2})}, {});
  const json pod = pod_json({.name = "job", .cpu = "1", .gpus = 4});
  EXPECT_EQ(service.filter(names_args(pod, {"a", "b"})).node_names->size(), 1u);
  EXPECT_EQ(score_of(service.prioritize(names_args(pod, {"a"}), nullptr), "a"), 10);
  EXPECT_EQ(service.bind({"job", "ml", "uid-job", "a"}).error, "");
  set_log_level(LogLevel::kInfo);
  (void)service.filter(names_args(pod_json({.name = "quiet", .cpu = "1"}), {"a"}));  // not logged at info
  set_log_sink(nullptr);
  std::fseek(f, 0, SEEK_SET);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  std::fclose(f);
  EXPECT_NE(
      out.find("level=debug msg=filter pod=ml/job candidates=2 passed=1 failed=0 unresolvable=1 reason=schedulable"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("msg=prioritize pod=ml/job candidates=1 feasible=1 chosen=a gpus=a:0,1,2,3"), std::string::npos)
      << out;
  EXPECT_NE(out.find("msg=bind pod=ml/job node=a gpus=a:0,1,2,3"), std::string::npos) << out;
  EXPECT_EQ(out.find("quiet"), std::string::npos) << out;
}

// A product the catalog does not know is its own pool, counted in a metric,
// never read as another model.
TEST(ExtenderEngine, UnknownGpuProductIsItsOwnPoolWithAMetric) {
  ExtenderService service("bestfit");
  load(service,
       {node_json({.name = "x1", .product = "NVIDIA-Future-X200", .gpus = 4}),
        node_json({.name = "x2", .product = "NVIDIA-Future-X200", .gpus = 4}), node_json({.name = "a", .gpus = 8})},
       {});
  ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.unknown_gpu_products, (std::map<std::string, int>{{"NVIDIA-Future-X200", 2}}));
  const std::string text = render_metrics(m, LatencyHistogram{}, RequestCounters{});
  EXPECT_NE(text.find("gpupack_unknown_gpu_product_nodes{product=\"NVIDIA-Future-X200\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpupack_node_capacity_gpus{node=\"x1\",Hostname=\"x1\",model=\"NVIDIA-Future-X200\"} 4"),
            std::string::npos)
      << text;
}

// Unknown NodeNames cannot blow up the reply: a short reason for the first
// hundred, the rest left out (they are filtered out either way).
TEST(ExtenderEngine, UnknownNodeNamesGetACompactReply) {
  ExtenderService service("bestfit");
  load(service, {node_json({.name = "a", .gpus = 8})}, {});
  std::vector<std::string> names = {"a"};
  for (int i = 0; i < 100000; ++i) names.push_back(fmt::format("made-up-node-with-a-long-name-{:06d}", i));
  size_t request_bytes = 0;
  for (const std::string& n : names) request_bytes += n.size() + 3;
  ExtenderFilterResult f = service.filter(names_args(pod_json({.name = "p", .cpu = "1", .gpus = 1}), names));
  EXPECT_EQ(*f.node_names, std::vector<std::string>{"a"});
  EXPECT_EQ(f.failed_and_unresolvable_nodes.size(), 100u);
  EXPECT_EQ(f.failed_and_unresolvable_nodes.begin()->second, "unknown to gpupack");
  const std::string reply = to_json_text(f);
  EXPECT_LT(reply.size(), request_bytes / 100) << reply.size() << " reply bytes for " << request_bytes;
}

// A stranger's requests change nothing: pods of another scheduler get an
// Error (and bind refuses them), nodes the node list lacks are unresolvable.
TEST(ExtenderEngine, PodsOfAnotherSchedulerAndUnlistedNodesChangeNothing) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.scheduler_names = {"gpupack-scheduler"};
  ExtenderService service(o);
  json coredns = pod_json({.ns = "kube-system", .name = "coredns-abc", .cpu = "1"});
  coredns["spec"]["schedulerName"] = "default-scheduler";
  load(service, {node_json({.name = "a", .gpus = 8})}, {coredns});
  json stranger = pod_json({.name = "stranger", .cpu = "1", .gpus = 1});
  stranger["spec"]["schedulerName"] = "default-scheduler";
  ExtenderFilterResult f = service.filter(names_args(stranger, {"a"}));
  EXPECT_NE(f.error.find("schedulerName \"default-scheduler\""), std::string::npos) << f.error;
  EXPECT_EQ(score_of(service.prioritize(names_args(stranger, {"a"}), nullptr), "a"), 0);
  EXPECT_NE(service.bind({"stranger", "ml", "uid-stranger", "a"}).error, "");
  const std::string refused = service.bind({"coredns-abc", "kube-system", "uid-coredns-abc", "a"}).error;
  EXPECT_NE(refused.find("schedulerName"), std::string::npos) << refused;
  EXPECT_TRUE(service.assignments().empty());
  EXPECT_TRUE(service.metrics().pending.empty());

  // A full Node object gpupack's node list lacks is not added.
  ExtenderArgs full;
  full.pod = pod_json({.name = "mine", .cpu = "1", .gpus = 1});
  full.nodes = std::vector<json>{node_json({.name = "a", .gpus = 8}), node_json({.name = "made-up", .gpus = 8})};
  f = service.filter(full);
  ASSERT_TRUE(f.nodes.has_value());
  EXPECT_EQ(f.nodes->size(), 1u);
  ASSERT_TRUE(f.failed_and_unresolvable_nodes.count("made-up"));
  EXPECT_NE(f.failed_and_unresolvable_nodes["made-up"].find("not in gpupack's node list"), std::string::npos);
  EXPECT_EQ(service.metrics().node_count, 1);

  // Opted in, it is.
  o.accept_request_nodes = true;
  ExtenderService open(o);
  load(open, {node_json({.name = "a", .gpus = 8})}, {});
  f = open.filter(full);
  EXPECT_EQ(f.nodes->size(), 2u);
  EXPECT_EQ(open.metrics().node_count, 2);
}

// A Binder that takes its time (an API server under load): filter goes on
// meanwhile, the GPUs stay reserved, a second bind of the pod is refused, and
// a refusal by the API undoes the reservation.
class SlowBinder : public Binder {
 public:
  std::string bind(const K8sPod&, const std::string&, const std::string&) override {
    std::unique_lock l(mu_);
    ++calls_;
    cv_.notify_all();
    cv_.wait(l, [&] { return released_; });
    return answer_;
  }
  void wait_for_call(int n) {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return calls_ >= n; });
  }
  void release(std::string answer) {
    std::lock_guard l(mu_);
    answer_ = std::move(answer);
    released_ = true;
    cv_.notify_all();
  }
  void rearm() {
    std::lock_guard l(mu_);
    released_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool released_ = false;
  std::string answer_;
};

TEST(ExtenderEngine, FilterDoesNotWaitForABindThatWaitsOnTheApi) {
  ExtenderService service("bestfit");
  SlowBinder binder;
  service.set_binder(&binder);
  load(service, {node_json({.name = "a", .gpus = 8})}, {});
  const json big = pod_json({.name = "big", .cpu = "1", .gpus = 6});
  ASSERT_EQ(service.filter(names_args(big, {"a"})).node_names->size(), 1u);
  ExtenderBindingResult result;
  std::thread bind([&] { result = service.bind({"big", "ml", "uid-big", "a"}); });
  binder.wait_for_call(1);
  // The bind is with the API: filter answers at once, with the 6 GPUs reserved.
  const auto t0 = std::chrono::steady_clock::now();
  ExtenderFilterResult f = service.filter(names_args(pod_json({.name = "three", .cpu = "1", .gpus = 3}), {"a"}));
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited_s, 1.0) << "filter waited for the bind";
  EXPECT_TRUE(f.node_names->empty()) << "the reserved GPUs were offered again";
  EXPECT_NE(service.bind({"big", "ml", "uid-big", "a"}).error.find("in progress"), std::string::npos);
  // A reload while the bind waits keeps the reservation.
  load(service, {node_json({.name = "a", .gpus = 8})}, {big});
  EXPECT_TRUE(
      service.filter(names_args(pod_json({.name = "three", .cpu = "1", .gpus = 3}), {"a"})).node_names->empty());
  binder.release("");
  bind.join();
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(service.assignments().at("ml/big"), "a:0,1,2,3,4,5");

  // The API refuses the next one: its GPUs are free again.
  binder.rearm();
  const json two = pod_json({.name = "two", .cpu = "1", .gpus = 2});
  ASSERT_EQ(service.filter(names_args(two, {"a"})).node_names->size(), 1u);
  std::thread refused([&] { result = service.bind({"two", "ml", "uid-two", "a"}); });
  binder.wait_for_call(2);
  binder.release("HTTP 409: binding refused");
  refused.join();
  EXPECT_EQ(result.error, "HTTP 409: binding refused");
  EXPECT_EQ(service.filter(names_args(two, {"a"})).node_names->size(), 1u);
  EXPECT_EQ(service.assignments().count("ml/two"), 0u);
}

// An assumed pod whose bind waits on the API keeps its GPUs even when it is
// filtered again or its assumption times out meanwhile.
TEST(ExtenderEngine, AnAssumedPodsBindInFlightKeepsItsGpus) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.assume_on_prioritize = true;
  o.assume_timeout = std::chrono::milliseconds(1);
  ExtenderService service(o);
  SlowBinder binder;
  service.set_binder(&binder);
  load(service, {node_json({.name = "a", .gpus = 8})}, {});
  const json big = pod_json({.name = "big", .cpu = "1", .gpus = 6});
  ASSERT_EQ(score_of(service.prioritize(names_args(big, {"a"}), nullptr), "a"), 10);  // assumed on a
  ExtenderBindingResult result;
  std::thread bind([&] { result = service.bind({"big", "ml", "uid-big", "a"}); });
  binder.wait_for_call(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the assume timeout
  (void)service.filter(names_args(big, {"a"}));               // filtered again meanwhile
  EXPECT_TRUE(service.filter(names_args(pod_json({.name = "three", .cpu = "1", .gpus = 3}), {"a"})).node_names->empty())
      << "the in-flight bind's GPUs were released";
  binder.release("");
  bind.join();
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(service.assignments().at("ml/big"), "a:0,1,2,3,4,5");
}

}  // namespace
}  // namespace gpupack
