// Gangs through ExtenderService: one plan at the first member, members
// steered to it, binds held until the minimum, timeouts, competing gangs,
// reloads, PodGroup minimums (src/server/extender_service.h "Gangs").
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/httplib_config.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

json member(const std::string& name, const std::string& gang, int size, int gpus, int min = 0) {
  std::map<std::string, std::string> ann = {{"gpupack.io/gang-name", gang},
                                            {"gpupack.io/gang-size", std::to_string(size)}};
  if (min > 0) ann["gpupack.io/gang-min-member"] = std::to_string(min);
  return pod_json({.name = name, .gpus = gpus, .annotations = ann});
}

ExtenderArgs names_args(const json& pod, std::vector<std::string> names) {
  ExtenderArgs a;
  a.pod = pod;
  a.node_names = std::move(names);
  return a;
}

// A service over `nodes` (8 GPUs each unless given) and pending `pods`.
struct Fixture {
  explicit Fixture(std::vector<json> node_objects, std::vector<json> pod_objects, ServiceOptions o = {})
      : service([&] {
          o.policy = "bestfit";
          return o;
        }()),
        pods(std::move(pod_objects)) {
    std::vector<K8sNode> nodes;
    for (const json& n : node_objects) {
      nodes.push_back(parse_node(n));
      names.push_back(nodes.back().spec.name);
    }
    std::vector<K8sPod> parsed;
    for (const json& p : pods) parsed.push_back(parse_pod(p));
    service.set_cluster(std::move(nodes), std::move(parsed), pods);
  }
  const json& pod(const std::string& name) const {
    for (const json& p : pods)
      if (p["metadata"]["name"] == name) return p;
    throw std::logic_error(name);
  }
  ExtenderFilterResult filter(const std::string& name) { return service.filter(names_args(pod(name), names)); }
  // The one node filter passes ("" when none).
  std::string passed(const std::string& name) {
    ExtenderFilterResult r = filter(name);
    EXPECT_EQ(r.error, "");
    if (!r.node_names || r.node_names->empty()) return "";
    EXPECT_EQ(r.node_names->size(), 1u) << name;
    return r.node_names->front();
  }
  // bind_async; the result lands in results[name] when answered.
  void bind(const std::string& name, const std::string& node) {
    service.bind_async(ExtenderBindingArgs{name, "ml", "uid-" + name, node}, [this, name](ExtenderBindingResult r) {
      std::lock_guard lock(mu);
      results[name] = r.error;
    });
  }
  std::optional<std::string> result(const std::string& name) {
    std::lock_guard lock(mu);
    auto it = results.find(name);
    return it == results.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  ExtenderService service;
  std::vector<json> pods;
  std::vector<std::string> names;
  std::mutex mu;
  std::map<std::string, std::string> results;
};

std::vector<json> nodes(int n, int gpus = 8, std::map<int, std::string> racks = {}) {
  std::vector<json> out;
  for (int i = 0; i < n; ++i) {
    testing::NodeShape s{.name = "n" + std::to_string(i), .gpus = gpus};
    if (racks.count(i)) s.labels["gpupack.io/rack"] = racks[i];
    out.push_back(node_json(s));
  }
  return out;
}

TEST(ExtenderGang, PlannedWholeAtTheFirstFilterAndBoundOnlyOnceAllMembersAsk) {
  // 3 x 4 GPUs on 2 x 8: no node holds the gang, so it spans both.
  Fixture f(nodes(2), {member("w0", "job", 3, 4), member("w1", "job", 3, 4), member("w2", "job", 3, 4)});
  const std::string n0 = f.passed("w0");
  ASSERT_NE(n0, "");
  // The whole gang is reserved: 12 GPUs, before any bind.
  EXPECT_DOUBLE_EQ(f.service.metrics().gang_reserved_gpu_milli, 12000);
  EXPECT_EQ(f.service.metrics().gangs_waiting, 1);
  const std::string n1 = f.passed("w1"), n2 = f.passed("w2");
  ASSERT_NE(n1, "");
  ASSERT_NE(n2, "");
  // Prioritize scores only the planned node 10.
  std::string error;
  for (const HostPriority& h : f.service.prioritize(names_args(f.pod("w1"), f.names), &error))
    EXPECT_EQ(h.score, h.host == n1 ? kMaxExtenderPriority : 0) << h.host;
  f.bind("w0", n0);
  f.bind("w1", n1);
  EXPECT_FALSE(f.result("w0").has_value()) << "a member's bind is held until the gang's minimum asks";
  EXPECT_FALSE(f.result("w1").has_value());
  EXPECT_EQ(f.service.metrics().gang_binds_held, 2);
  EXPECT_TRUE(f.service.assignments().empty());
  f.bind("w2", n2);
  for (const char* m : {"w0", "w1", "w2"}) EXPECT_EQ(f.result(m), std::optional<std::string>("")) << m;
  EXPECT_EQ(f.service.assignments().size(), 3u);
  const ServiceMetrics m = f.service.metrics();
  EXPECT_EQ(m.gangs_placed, 1u);
  EXPECT_EQ(m.gangs_waiting, 0);
  EXPECT_EQ(m.gang_reserved_gpu_milli, 0);
  EXPECT_EQ(m.bound_pods, 3);
}

TEST(ExtenderGang, AMemberIsSteeredToItsPlannedNodeAndABindElsewhereIsRefused) {
  Fixture f(nodes(3), {member("a", "job", 2, 8), member("b", "job", 2, 8)});
  const std::string na = f.passed("a");
  ExtenderFilterResult r = f.filter("b");
  ASSERT_TRUE(r.node_names.has_value());
  ASSERT_EQ(r.node_names->size(), 1u);
  EXPECT_EQ(r.failed_nodes.size(), 2u);
  for (const auto& [node, why] : r.failed_nodes)
    EXPECT_NE(why.find("gang ml/job: this member is planned on node"), std::string::npos) << why;
  const std::string nb = r.node_names->front();
  EXPECT_NE(na, nb);
  const std::string other = na == "n2" || nb == "n2" ? (na == "n1" || nb == "n1" ? "n0" : "n1") : "n2";
  f.bind("a", other);
  ASSERT_TRUE(f.result("a").has_value());
  EXPECT_NE(f.result("a")->find("is planned on node " + na), std::string::npos) << *f.result("a");
  EXPECT_EQ(f.service.metrics().gang_binds_held, 0);
}

TEST(ExtenderGang, AGangThatDoesNotFitFailsEveryNodeAndReservesNothing) {
  Fixture f(nodes(2), {member("big0", "big", 3, 8), member("big1", "big", 3, 8), member("big2", "big", 3, 8)});
  ExtenderFilterResult r = f.filter("big0");
  EXPECT_TRUE(!r.node_names || r.node_names->empty());
  ASSERT_EQ(r.failed_nodes.size(), 2u);
  EXPECT_NE(r.failed_nodes.begin()->second.find("do not fit together"), std::string::npos)
      << r.failed_nodes.begin()->second;
  const ServiceMetrics m = f.service.metrics();
  EXPECT_EQ(m.gang_reserved_gpu_milli, 0);
  EXPECT_EQ(m.gangs_waiting, 0);
  ASSERT_FALSE(m.pending.empty());
  EXPECT_EQ(m.pending.front().reason, "gang");
}

TEST(ExtenderGang, FewerMembersKnownThanTheMinimumWaitsHoldingNothing) {
  // gang-size 4: only 2 members exist yet.
  Fixture f(nodes(2), {member("p0", "job", 4, 1), member("p1", "job", 4, 1)});
  ExtenderFilterResult r = f.filter("p0");
  EXPECT_TRUE(!r.node_names || r.node_names->empty());
  ASSERT_FALSE(r.failed_nodes.empty());
  EXPECT_NE(r.failed_nodes.begin()->second.find("2 of its 4 members known"), std::string::npos)
      << r.failed_nodes.begin()->second;
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 0);
}

TEST(ExtenderGang, TwoCompetingGangsOneIsPlacedWholeTheOtherHoldsNothing) {
  Fixture f(nodes(2), {member("a0", "a", 3, 4), member("b0", "b", 3, 4), member("a1", "a", 3, 4),
                       member("b1", "b", 3, 4), member("a2", "a", 3, 4), member("b2", "b", 3, 4)});
  std::map<std::string, std::string> chosen;
  for (const char* p : {"a0", "b0", "a1", "b1", "a2", "b2"}) chosen[p] = f.passed(p);
  for (const char* p : {"b0", "b1", "b2"}) EXPECT_EQ(chosen[p], "") << p;
  for (const char* p : {"a0", "a1", "a2"}) {
    ASSERT_NE(chosen[p], "") << p;
    f.bind(p, chosen[p]);
  }
  for (const char* p : {"a0", "a1", "a2"}) EXPECT_EQ(f.result(p), std::optional<std::string>("")) << p;
  const ServiceMetrics m = f.service.metrics();
  EXPECT_EQ(m.gang_reserved_gpu_milli, 0);
  EXPECT_EQ(m.gangs_placed, 1u);
  EXPECT_EQ(f.service.assignments().size(), 3u);
  // Gang b still does not fit (4 GPUs left); it holds nothing.
  EXPECT_EQ(f.passed("b0"), "");
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 0);
}

TEST(ExtenderGang, APlanWithoutProgressTimesOutReleasesItsGpusAndFailsTheHeldBinds) {
  ServiceOptions o;
  o.gang_timeout = std::chrono::milliseconds(50);
  Fixture f(nodes(2), {member("w0", "job", 3, 4), member("w1", "job", 3, 4), member("w2", "job", 3, 4)}, o);
  const std::string n0 = f.passed("w0"), n1 = f.passed("w1");
  f.bind("w0", n0);
  f.bind("w1", n1);  // w2 never asks
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 12000);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  f.service.tick();
  for (const char* m : {"w0", "w1"}) {
    ASSERT_TRUE(f.result(m).has_value()) << m;
    EXPECT_NE(f.result(m)->find("2 of the 3 binds it needs arrived"), std::string::npos) << *f.result(m);
  }
  ServiceMetrics m = f.service.metrics();
  EXPECT_EQ(m.gang_reserved_gpu_milli, 0);
  EXPECT_EQ(m.gangs_timed_out, 1u);
  EXPECT_EQ(m.gangs_waiting, 0);
  EXPECT_TRUE(f.service.assignments().empty());
  // The scheduler retries: the gang is planned again and binds whole.
  std::map<std::string, std::string> chosen;
  for (const char* p : {"w0", "w1", "w2"}) chosen[p] = f.passed(p);
  for (const char* p : {"w0", "w1", "w2"}) f.bind(p, chosen[p]);
  for (const char* p : {"w0", "w1", "w2"}) EXPECT_EQ(f.result(p), std::optional<std::string>("")) << p;
  EXPECT_EQ(f.service.metrics().gangs_placed, 1u);
}

TEST(ExtenderGang, AHeldCallIsAnsweredBeforeTheSchedulersTimeoutAndTheMemberIsStillBoundWithItsGang) {
  ServiceOptions o;
  o.gang_bind_wait = std::chrono::milliseconds(30);
  o.gang_timeout = std::chrono::seconds(30);
  Fixture f(nodes(2), {member("w0", "job", 3, 4), member("w1", "job", 3, 4), member("w2", "job", 3, 4)}, o);
  std::map<std::string, std::string> chosen;
  for (const char* p : {"w0", "w1", "w2"}) chosen[p] = f.passed(p);
  f.bind("w0", chosen["w0"]);
  f.bind("w1", chosen["w1"]);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  f.service.tick();
  for (const char* m : {"w0", "w1"}) {
    ASSERT_TRUE(f.result(m).has_value()) << m;
    EXPECT_NE(f.result(m)->find("gpupack binds this pod itself"), std::string::npos) << *f.result(m);
  }
  EXPECT_EQ(f.service.metrics().gang_binds_held, 0);
  EXPECT_TRUE(f.service.assignments().empty()) << "nothing is bound before the minimum";
  f.bind("w2", chosen["w2"]);
  EXPECT_EQ(f.result("w2"), std::optional<std::string>(""));
  EXPECT_EQ(f.service.assignments().size(), 3u) << "the members whose calls were answered are bound too";
  // The scheduler retries w0: already bound there, so success.
  f.bind("w0", chosen["w0"]);
  EXPECT_EQ(f.result("w0"), std::optional<std::string>(""));
}

TEST(ExtenderGang, StopAnswersHeldBindsAndReleasesTheirGpus) {
  Fixture f(nodes(2), {member("w0", "job", 2, 8), member("w1", "job", 2, 8)});
  f.bind("w0", f.passed("w0"));
  f.service.stop_gangs("stopping");
  EXPECT_EQ(f.result("w0"), std::optional<std::string>("stopping"));
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 0);
}

TEST(ExtenderGang, AReloadKeepsTheReservationOfAPlannedGang) {
  Fixture f(nodes(2), {member("w0", "job", 2, 8), member("w1", "job", 2, 8), pod_json({.name = "single", .gpus = 8})});
  const std::string n0 = f.passed("w0");
  f.bind("w0", n0);
  // The API relists (nothing changed): the plan and its GPUs stay.
  std::vector<K8sNode> ns;
  for (const json& n : nodes(2)) ns.push_back(parse_node(n));
  std::vector<K8sPod> ps;
  for (const json& p : f.pods) ps.push_back(parse_pod(p));
  f.service.set_cluster(std::move(ns), std::move(ps), f.pods);
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 16000);
  EXPECT_EQ(f.passed("single"), "") << "the gang's GPUs are not free for another pod";
  const std::string n1 = f.passed("w1");
  f.bind("w1", n1);
  EXPECT_EQ(f.result("w0"), std::optional<std::string>(""));
  EXPECT_EQ(f.result("w1"), std::optional<std::string>(""));
}

TEST(ExtenderGang, AGangNoNodeHoldsStaysInsideOneRack) {
  // Rack r0: n0 (8 free), n1 (4 free after a running pod); rack r1: n2, n3 (8 free each).
  // A 2 x 8 gang fits only within r1 or across racks; it must stay in r1.
  ServiceOptions o;
  o.topology_labels = {"gpupack.io/rack"};
  std::vector<json> ps = {pod_json({.name = "running", .gpus = 4, .node = "n1"}), member("g0", "g", 2, 8),
                          member("g1", "g", 2, 8)};
  Fixture f(nodes(4, 8, {{0, "r0"}, {1, "r0"}, {2, "r1"}, {3, "r1"}}), ps, o);
  const std::string a = f.passed("g0"), b = f.passed("g1");
  EXPECT_TRUE((a == "n2" && b == "n3") || (a == "n3" && b == "n2")) << a << " " << b;
}

TEST(ExtenderGang, PodGroupMinimumFromTheObjectAndTheCoschedulingLabel) {
  // scheduler-plugins form: the label names the PodGroup, whose minMember is 2.
  auto labelled = [](const std::string& name) {
    return pod_json({.name = name, .gpus = 8, .labels = {{"scheduling.x-k8s.io/pod-group", "pg"}}});
  };
  Fixture f(nodes(2), {labelled("m0"), labelled("m1"), labelled("m2")});
  f.service.set_pod_groups({{"ml/pg", 2}});
  // Three members known, minimum 2, 16 GPUs: the plan places two and binds
  // once both ask; the third is left out while the plan lives.
  std::map<std::string, std::string> chosen;
  for (const char* p : {"m0", "m1", "m2"}) chosen[p] = f.passed(p);
  int planned = 0;
  for (const auto& [p, n] : chosen) planned += !n.empty();
  EXPECT_EQ(planned, 2);
  for (const auto& [p, n] : chosen)
    if (!n.empty()) f.bind(p, n);
  for (const auto& [p, n] : chosen) {
    if (!n.empty()) {
      EXPECT_EQ(f.result(p), std::optional<std::string>("")) << p;
    }
  }
  EXPECT_EQ(f.service.metrics().gangs_placed, 1u);
}

// Over HTTP with one verb worker: held binds hold no worker (a gang larger
// than the pool still binds), and stop() answers a held bind.
TEST(ExtenderGangHttp, HeldBindsHoldNoWorkerAndStopAnswersThem) {
  std::vector<json> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(member("w" + std::to_string(i), "job", 4, 2));
  pods.push_back(member("x0", "other", 2, 4));
  pods.push_back(member("x1", "other", 2, 4));
  Fixture f(nodes(2), pods);
  LatencyHistogram latency;
  RequestCounters counters;
  HttpOptions o;
  o.port = 0;
  o.threads = 1;
  HttpServer server(f.service, o, latency, counters);
  const int port = server.start();
  auto post = [port](const std::string& verb, const json& body) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    auto r = c.Post(("/" + verb).c_str(), body.dump(), "application/json");
    return r ? json::parse(r->body) : json{{"Error", "no reply"}};
  };
  auto bind_body = [](const std::string& pod, const std::string& node) {
    return json{{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + pod}, {"Node", node}};
  };
  std::vector<std::future<json>> held;
  for (int i = 0; i < 4; ++i) {
    const std::string p = "w" + std::to_string(i);
    const json r = post("filter", json{{"Pod", f.pod(p)}, {"NodeNames", f.names}});
    ASSERT_EQ(r["NodeNames"].size(), 1u) << r.dump();
    const std::string node = r["NodeNames"][0];
    if (i < 3) {
      held.push_back(std::async(std::launch::async, post, "bind", bind_body(p, node)));
      // Wait until the server holds it (a filter on the one worker still runs).
      for (int k = 0; k < 200 && f.service.metrics().gang_binds_held < i + 1; ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ASSERT_EQ(f.service.metrics().gang_binds_held, i + 1);
    } else {
      EXPECT_EQ(post("bind", bind_body(p, node)).value("Error", ""), "");
    }
  }
  for (auto& h : held) EXPECT_EQ(h.get().value("Error", ""), "");
  EXPECT_EQ(f.service.assignments().size(), 4u);
  // A held bind when the server stops is answered, not dropped.
  const json r = post("filter", json{{"Pod", f.pod("x0")}, {"NodeNames", f.names}});
  ASSERT_EQ(r["NodeNames"].size(), 1u) << r.dump();
  auto pending = std::async(std::launch::async, post, "bind", bind_body("x0", r["NodeNames"][0]));
  for (int k = 0; k < 200 && f.service.metrics().gang_binds_held < 1; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.stop();
  EXPECT_NE(pending.get().value("Error", "").find("stopping"), std::string::npos);
  EXPECT_EQ(f.service.metrics().gang_reserved_gpu_milli, 0);
}

}  // namespace
}  // namespace gpupack
