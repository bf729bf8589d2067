// The extender over real HTTP: every verb in both node-cache modes, replies
// checked key by key against the wire reference, bad input, slow clients,
// metrics and a restart from the written-back pods.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "server/httplib_config.h"

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::NodeShape;
using testing::pod_json;
using testing::PodShape;

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

// r[key][node] as a string, or the whole reply when absent (for messages).
std::string reason(const json& r, const std::string& key, const std::string& node) {
  if (r.contains(key) && r[key].is_object() && r[key].contains(node) && r[key][node].is_string()) return r[key][node];
  return "<no " + key + "[" + node + "] in " + r.dump() + ">";
}

class ExtenderHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    nodes_ = {node_json({"a100-0"}), node_json({"a100-1"}), node_json({"t4-0", "Tesla-T4", 4, "32", "128Gi"}),
              node_json({"mig-0", "NVIDIA-A100-SXM4-80GB", 0, "64", "256Gi", {{"1g.10gb", 7}}})};
    pods_ = {pod_json({.name = "running-0", .gpus = 4, .node = "a100-1", .assigned = "a100-1:0,1,2,3"})};
    load();
    HttpOptions o;
    o.port = 0;
    o.url_prefix = "/gpupack";
    o.read_timeout_s = 1;
    o.max_body_bytes = 1 << 20;
    server_ = std::make_unique<HttpServer>(service_, o, latency_, counters_);
    port_ = server_->start();
  }
  void TearDown() override { server_->stop(); }

  void load() {
    std::vector<K8sNode> n;
    for (const json& j : nodes_) n.push_back(parse_node(j));
    std::vector<K8sPod> p;
    for (const json& j : pods_) p.push_back(parse_pod(j));
    service_.set_cluster(std::move(n), std::move(p), pods_);
  }

  httplib::Result post(const std::string& verb, const std::string& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    return c.Post(("/gpupack/" + verb).c_str(), body, "application/json");
  }
  json post_ok(const std::string& verb, const json& body) {
    auto r = post(verb, body.dump());
    EXPECT_TRUE(r) << verb;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  json cache_args(const json& pod, std::vector<std::string> names) {
    return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  }
  json full_args(const json& pod, std::vector<json> nodes) {
    return {{"Pod", pod}, {"Nodes", {{"metadata", json::object()}, {"items", nodes}}}, {"NodeNames", nullptr}};
  }

  std::vector<json> nodes_, pods_;
  // Nodes sent as full objects are learned here (serve --accept-request-nodes):
  // several tests below send nodes the list lacks; the default refusal is
  // ExtenderEngine.PodsOfAnotherSchedulerAndUnlistedNodesChangeNothing.
  static ServiceOptions options() {
    ServiceOptions o;
    o.policy = "fgd";
    o.accept_request_nodes = true;
    return o;
  }
  ExtenderService service_{options()};
  LatencyHistogram latency_;
  RequestCounters counters_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

TEST_F(ExtenderHttp, FilterNodeCacheCapableNamesTheFailedDimension) {
  json pod = pod_json({.name = "train-0", .gpus = 6, .models = "A100-80GB"});
  json r = post_ok("filter", cache_args(pod, {"a100-0", "a100-1", "t4-0", "ghost"}));
  EXPECT_EQ(keys_of(r),
            (std::set<std::string>{"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}));
  EXPECT_TRUE(r["Nodes"].is_null());
  EXPECT_EQ(r["NodeNames"], json({"a100-0"}));
  EXPECT_EQ(r["Error"], "");
  // a100-1 has 4 of 8 GPUs taken: may fit after preemption.
  ASSERT_TRUE(r["FailedNodes"].contains("a100-1"));
  EXPECT_EQ(reason(r, "FailedNodes", "a100-1").rfind("gpu_milli:", 0), 0u) << r["FailedNodes"];
  // t4-0 has only 4 GPUs; ghost is unknown: no preemption helps.
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "t4-0").rfind("gpu_milli:", 0), 0u);
  EXPECT_TRUE(r["FailedAndUnresolvableNodes"].contains("ghost"));
  // A model the node does not have.
  json a100_only = pod_json({.name = "train-0b", .gpus = 2, .models = "A100-80GB"});
  r = post_ok("filter", cache_args(a100_only, {"t4-0", "a100-0"}));
  EXPECT_EQ(r["NodeNames"], json({"a100-0"}));
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "t4-0").rfind("model:", 0), 0u) << r;
}

TEST_F(ExtenderHttp, FilterGpuMemoryMigAndCpuDimensions) {
  json big = pod_json({.name = "big-mem", .gpu_milli = 500, .gpu_memory_mib = 100000});
  json r = post_ok("filter", cache_args(big, {"a100-0"}));
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "a100-0").rfind("gpu_memory:", 0), 0u) << r;
  json mig = pod_json({.name = "mig-pod", .mig = {{"1g.10gb", 8}}});
  r = post_ok("filter", cache_args(mig, {"mig-0"}));
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "mig-0").rfind("mig_slot:", 0), 0u) << r;
  json mig2 = pod_json({.name = "mig-pod-2", .mig = {{"1g.10gb", 2}}});
  r = post_ok("filter", cache_args(mig2, {"mig-0", "a100-0"}));
  EXPECT_EQ(r["NodeNames"], json({"mig-0"}));
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "a100-0").rfind("mig_slot:", 0), 0u);
  json cpu = pod_json({.name = "cpu-hog", .cpu = "94", .gpus = 1});
  r = post_ok("filter", cache_args(cpu, {"a100-1"}));
  EXPECT_EQ(reason(r, "FailedNodes", "a100-1").rfind("cpu:", 0), 0u) << r;
}

TEST_F(ExtenderHttp, FilterFullNodesRepliesWithNodeObjectsAndLearnsNewNodes) {
  json pod = pod_json({.name = "train-1", .gpus = 2});
  json extra = node_json({"a100-new"});
  json r = post_ok("filter", full_args(pod, {nodes_[0], nodes_[2], extra}));
  EXPECT_EQ(keys_of(r),
            (std::set<std::string>{"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}));
  EXPECT_TRUE(r["NodeNames"].is_null());
  ASSERT_TRUE(r["Nodes"].is_object());
  ASSERT_EQ(r["Nodes"]["items"].size(), 3u);     // the T4 node fits two whole GPUs too
  EXPECT_EQ(r["Nodes"]["items"][0], nodes_[0]);  // the objects sent, unchanged
  EXPECT_EQ(r["Nodes"]["items"][2]["metadata"]["name"], "a100-new");
  // The new node is now known in cache mode as well.
  json r2 = post_ok("filter", cache_args(pod, {"a100-new"}));
  EXPECT_EQ(r2["NodeNames"], json({"a100-new"}));
}

TEST_F(ExtenderHttp, FilterNamesTopologyForNodesSentWithTheirGpuTopology) {
  // Nodes sent as full objects carry gpupack.io/gpu-topology; the service
  // learns them on the way.
  json whole =
      node_json({.name = "hgx-a", .annotations = {{"gpupack.io/gpu-topology", "nvlink=0-7;numa=0,2,4,6|1,3,5,7"}}});
  json split = node_json({.name = "hgx-b", .annotations = {{"gpupack.io/gpu-topology", "nvlink=0-3|4-7"}}});
  json bad = node_json({.name = "hgx-c", .annotations = {{"gpupack.io/gpu-topology", "nvlink=0-3|3-7"}}});
  json pod =
      pod_json({.name = "train-nv", .uid = "u-nv", .gpus = 6, .annotations = {{"gpupack.io/gpu-scope", "nvlink"}}});
  json r = post_ok("filter", full_args(pod, {nodes_[0], whole, split, bad}));
  ASSERT_TRUE(r["Nodes"].is_object()) << r;
  ASSERT_EQ(r["Nodes"]["items"].size(), 1u) << r;
  EXPECT_EQ(r["Nodes"]["items"][0]["metadata"]["name"], "hgx-a");
  EXPECT_EQ(
      reason(r, "FailedAndUnresolvableNodes", "a100-0").rfind("topology: node a100-0 declares no nvlink groups", 0),
      0u);
  EXPECT_EQ(reason(r, "FailedAndUnresolvableNodes", "hgx-b")
                .rfind("topology: node hgx-b: its largest nvlink group has 4 GPUs, 6 requested", 0),
            0u);
  // A malformed annotation rejects the node object, naming node and annotation.
  const std::string why = reason(r, "FailedAndUnresolvableNodes", "hgx-c");
  EXPECT_NE(why.find("Node hgx-c: metadata.annotations[\"gpupack.io/gpu-topology\"]"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 3 is in more than one group"), std::string::npos) << why;

  json b = post_ok("bind", {{"PodName", "train-nv"}, {"PodNamespace", "ml"}, {"PodUID", "u-nv"}, {"Node", "hgx-a"}});
  EXPECT_EQ(b["Error"], "");
  EXPECT_EQ(service_.assignments()["ml/train-nv"], "hgx-a:0,1,2,3,4,5");
  // GPUs 6 (NUMA 0) and 7 (NUMA 1) are left: two GPUs fit, but not on one
  // NUMA node; the pod waits for "topology", which /metrics reports.
  json next = pod_json({.name = "train-numa", .gpus = 2, .annotations = {{"gpupack.io/gpu-scope", "numa"}}});
  r = post_ok("filter", cache_args(next, {"hgx-a"}));
  EXPECT_EQ(r["NodeNames"], json::array());
  EXPECT_EQ(reason(r, "FailedNodes", "hgx-a").rfind("topology: node hgx-a: no numa group holds 2 fitting GPUs", 0), 0u)
      << r;
  httplib::Client c("127.0.0.1", port_);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("gpupack_oldest_pending_pod_age_seconds{reason=\"topology\"}"), std::string::npos);
  EXPECT_NE(m->body.find("gpupack_pending_pods_over_age{reason=\"topology\",age=\"1h\"} 0"), std::string::npos);
  EXPECT_EQ(m->body.find("train-numa"), std::string::npos) << "a series names a pod";
  EXPECT_NE(m->body.find("gpupack_pending_pods{reason=\"topology\"} 1"), std::string::npos);
}

TEST_F(ExtenderHttp, FilterRecordedCaptureBody) {
  std::ifstream in(std::string(GPUPACK_SHARED_DIR) + "/reference/extender-captures/filter-request-full-nodes.json");
  if (!in) GTEST_SKIP() << "capture not found";
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = post("filter", ss.str());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  json req = json::parse(ss.str());
  ASSERT_EQ(j["Nodes"]["items"].size(), req["Nodes"]["items"].size());
  for (size_t i = 0; i < req["Nodes"]["items"].size(); ++i) EXPECT_EQ(j["Nodes"]["items"][i], req["Nodes"]["items"][i]);
  EXPECT_TRUE(j["NodeNames"].is_null());
  auto p = post("prioritize", ss.str());
  ASSERT_TRUE(p);
  json scores = json::parse(p->body);
  ASSERT_EQ(scores.size(), 2u);
  for (const json& s : scores) {
    EXPECT_EQ(keys_of(s), (std::set<std::string>{"Host", "Score"}));
    EXPECT_GE(s["Score"].get<int>(), 0);
    EXPECT_LE(s["Score"].get<int>(), 10);
  }
}

TEST_F(ExtenderHttp, PrioritizeBothModesScoresZeroToTen) {
  json pod = pod_json({.name = "frac", .gpu_milli = 250});
  for (const json& args : {cache_args(pod, {"a100-0", "a100-1", "t4-0", "mig-0"}),
                           full_args(pod, {nodes_[0], nodes_[1], nodes_[2], nodes_[3]})}) {
    json r = post_ok("prioritize", args);
    ASSERT_TRUE(r.is_array());
    ASSERT_EQ(r.size(), 4u);
    std::map<std::string, int> score;
    for (const json& hp : r) {
      EXPECT_EQ(keys_of(hp), (std::set<std::string>{"Host", "Score"}));
      score[hp["Host"]] = hp["Score"];
      EXPECT_GE(hp["Score"].get<int>(), 0);
      EXPECT_LE(hp["Score"].get<int>(), 10);
    }
    EXPECT_EQ(score["mig-0"], 0);  // infeasible: no whole GPUs
    int best = 0;
    for (auto& [h, s] : score) best = std::max(best, s);
    EXPECT_EQ(best, 10);
  }
}

TEST_F(ExtenderHttp, BindRecordsAssignmentOnceAndReflectsInMetrics) {
  json pod = pod_json({.name = "train-2", .uid = "u-2", .gpus = 2, .gpu_memory_mib = 30000});
  post_ok("filter", cache_args(pod, {"a100-0"}));
  json bind = {{"PodName", "train-2"}, {"PodNamespace", "ml"}, {"PodUID", "u-2"}, {"Node", "a100-0"}};
  json r = post_ok("bind", bind);
  EXPECT_EQ(keys_of(r), std::set<std::string>{"Error"});
  EXPECT_EQ(r["Error"], "");
  auto a = service_.assignments();
  EXPECT_EQ(a["ml/train-2"], "a100-0:0,1");
  EXPECT_EQ(post_ok("bind", bind)["Error"], "");  // retry: no second charge
  // Wrong UID and unknown pods are bind errors (200 with Error).
  bind["PodUID"] = "other";
  EXPECT_NE(post_ok("bind", bind)["Error"], "");
  json unknown = {{"PodName", "nobody"}, {"PodNamespace", "ml"}, {"PodUID", ""}, {"Node", "a100-0"}};
  EXPECT_NE(post_ok("bind", unknown)["Error"], "");

  httplib::Client c("127.0.0.1", port_);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(
      m->body.find("gpupack_gpu_allocated_ratio{node=\"a100-0\",Hostname=\"a100-0\",gpu=\"1\",model=\"A100-80GB\"} 1"),
      std::string::npos);
  EXPECT_NE(
      m->body.find(
          "gpupack_gpu_allocated_memory_bytes{node=\"a100-0\",Hostname=\"a100-0\",gpu=\"0\",model=\"A100-80GB\"} " +
          std::to_string(30000LL * 1024 * 1024)),
      std::string::npos);
  EXPECT_NE(m->body.find("gpupack_node_allocated_gpus{node=\"a100-0\",Hostname=\"a100-0\",model=\"A100-80GB\"} 2"),
            std::string::npos);
  EXPECT_NE(m->body.find("gpupack_decision_duration_seconds_count{verb=\"bind\"}"), std::string::npos);
  EXPECT_NE(m->body.find("gpupack_pool_fragmentation_ratio{pool=\"A100-80GB\"}"), std::string::npos);
}

TEST_F(ExtenderHttp, PreemptKeepsNodesWhereVictimsMakeRoomBothModes) {
  // running-0 holds 4 GPUs of a100-1; a 6-GPU pod fits there only without it.
  json pod = pod_json({.name = "big", .gpus = 6});
  json meta = {{"Pod", pod},
               {"NodeNameToVictims", nullptr},
               {"NodeNameToMetaVictims",
                {{"a100-1", {{"Pods", {{{"UID", "uid-running-0"}}}}, {"NumPDBViolations", 0}}},
                 {"t4-0", {{"Pods", json::array()}, {"NumPDBViolations", 1}}}}}};
  json r = post_ok("preempt", meta);
  EXPECT_EQ(keys_of(r), std::set<std::string>{"NodeNameToMetaVictims"});
  ASSERT_TRUE(r["NodeNameToMetaVictims"].contains("a100-1"));
  EXPECT_FALSE(r["NodeNameToMetaVictims"].contains("t4-0"));
  EXPECT_EQ(r["NodeNameToMetaVictims"]["a100-1"]["Pods"][0]["UID"], "uid-running-0");
  EXPECT_EQ(keys_of(r["NodeNameToMetaVictims"]["a100-1"]), (std::set<std::string>{"Pods", "NumPDBViolations"}));
  // Nothing changed: running-0 is still bound.
  EXPECT_EQ(service_.assignments()["ml/running-0"], "a100-1:0,1,2,3");

  json full = {{"Pod", pod},
               {"NodeNameToVictims", {{"a100-1", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}},
               {"NodeNameToMetaVictims", nullptr}};
  r = post_ok("preempt", full);  // no victims: still does not fit
  EXPECT_TRUE(r["NodeNameToMetaVictims"].empty());
  full["NodeNameToVictims"]["a100-1"]["Pods"] = json::array({pods_[0]});
  r = post_ok("preempt", full);
  EXPECT_EQ(r["NodeNameToMetaVictims"]["a100-1"]["Pods"][0]["UID"], "uid-running-0");
}

TEST_F(ExtenderHttp, UnreadableInputGets4xxPodProblemsGet200WithErrorStateIsUnchanged) {
  auto before = service_.assignments();
  auto r = post("filter", "{\"Pod\": {");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_FALSE(json::parse(r->body)["Error"].get<std::string>().empty());
  r = post("prioritize", R"({"Pod": 3, "NodeNames": ["a100-0"]})");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("Pod"), std::string::npos);
  r = post("bind", R"({"PodName": 7})");
  EXPECT_EQ(r->status, 400);
  // A readable request about a pod gpupack cannot serve: 200 with Error, so
  // that the scheduler shows the reason (it logs only the code of a 4xx).
  json unknown = pod_json({.name = "odd", .extra_limits = {{"nvidia.com/gpumem", "4000"}}});
  r = post("filter", cache_args(unknown, {"a100-0"}).dump());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(json::parse(r->body)["Error"].get<std::string>().find("nvidia.com/gpumem"), std::string::npos);
  r = post("filter", std::string(2 << 20, ' '));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("limit"), std::string::npos);
  httplib::Client c("127.0.0.1", port_);
  auto nf = c.Get("/nothing");
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(service_.assignments(), before);
}

// A raw TCP connection to the server on loopback; -1 on failure.
int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(ExtenderHttp, SlowClientIsCutOffWhileOthersAreServed) {
  const int fd = connect_loopback(port_);
  ASSERT_GE(fd, 0);
  const std::string partial = "POST /gpupack/filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"Pod\":";
  ASSERT_EQ(::send(fd, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
  // Another client is answered while the slow one stalls.
  json pod = pod_json({.name = "quick", .gpus = 1});
  EXPECT_EQ(post_ok("filter", cache_args(pod, {"a100-0"}))["NodeNames"], json({"a100-0"}));
  // The server gives up on the slow client after its read timeout (1 s).
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[512];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  EXPECT_LT(waited, 4.5) << "connection not closed by the server";
  if (n > 0) {  // or a 400 for the short body
    EXPECT_NE(std::string(buf, n).find(" 400"), std::string::npos);
  }
}

// The scheduler's keep-alive connection is not closed after a handful of
// requests (a reconnect lands on a worker with cold buffers).
TEST_F(ExtenderHttp, KeepAliveConnectionServesManyRequests) {
  const int fd = connect_loopback(port_);
  ASSERT_GE(fd, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size())) << i;
    std::string reply;
    char buf[512];
    while (reply.find("ok\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      ASSERT_GT(n, 0) << "connection closed after " << i << " requests";
      reply.append(buf, static_cast<size_t>(n));
    }
    EXPECT_NE(reply.find(" 200"), std::string::npos) << reply;
    EXPECT_EQ(reply.find("Connection: close"), std::string::npos) << "request " << i << ": " << reply;
  }
  ::close(fd);
}

TEST_F(ExtenderHttp, HealthAndReadiness) {
  httplib::Client c("127.0.0.1", port_);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  EXPECT_EQ(c.Get("/readyz")->status, 200);
  ExtenderService fresh("fgd");
  LatencyHistogram l;
  RequestCounters rc;
  HttpOptions o;
  o.port = 0;
  HttpServer s(fresh, o, l, rc);
  httplib::Client c2("127.0.0.1", s.start());
  EXPECT_EQ(c2.Get("/readyz")->status, 503);
  EXPECT_EQ(c2.Get("/healthz")->status, 200);
  s.stop();
}

TEST_F(ExtenderHttp, RestartFromWrittenBackPodsKeepsEveryAssignment) {
  // Bind a mix of whole, fractional and memory-sized pods over HTTP.
  for (int i = 0; i < 20; ++i) {
    PodShape s{.name = "w-" + std::to_string(i)};
    if (i < 6)
      s.gpus = 1;
    else
      s.gpu_milli = 100 + 100 * (i % 3), s.gpu_memory_mib = 4000 + 1000 * (i % 5);
    json pod = pod_json(s);
    json f = post_ok("filter", cache_args(pod, {"a100-0", "a100-1", "t4-0"}));
    ASSERT_FALSE(f["NodeNames"].empty()) << f;
    json p = post_ok("prioritize", cache_args(pod, f["NodeNames"].get<std::vector<std::string>>()));
    std::string best;
    int top = -1;
    for (const json& hp : p)
      if (hp["Score"].get<int>() > top) top = hp["Score"], best = hp["Host"];
    json b =
        post_ok("bind", {{"PodName", s.name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + s.name}, {"Node", best}});
    ASSERT_EQ(b["Error"], "") << b;
  }
  const auto before = service_.assignments();
  ASSERT_EQ(before.size(), 21u);
  // "Kill" the server, restart from the cluster objects (pods with nodeName +
  // annotation as bind wrote them).
  json pods = service_.pod_list_json();
  std::vector<K8sNode> n;
  for (const json& j : nodes_) n.push_back(parse_node(j));
  ExtenderService restarted("fgd");
  auto unattributed = restarted.set_cluster(n, parse_pod_list(pods.dump(), "pods"));
  EXPECT_TRUE(unattributed.empty());
  EXPECT_EQ(restarted.assignments(), before);
  // And the restarted model is as full: the same metrics per GPU.
  auto m1 = service_.metrics(), m2 = restarted.metrics();
  ASSERT_EQ(m1.gpus.size(), m2.gpus.size());
  for (size_t i = 0; i < m1.gpus.size(); ++i) {
    EXPECT_EQ(m1.gpus[i].allocated_milli, m2.gpus[i].allocated_milli);
    EXPECT_EQ(m1.gpus[i].allocated_memory_mib, m2.gpus[i].allocated_memory_mib);
  }
}

}  // namespace
}  // namespace gpupack
