// KubeClient and KubeBinder against a local fake API server (httplib) that
// records the calls; serve-from-API restart through the same fake.
#include "server/kube_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include "server/httplib_config.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/http_server.h"
#include "server/kubeconfig.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

// A fake API server: serves node and pod lists, applies annotation merge
// patches and Bindings to its pods, and records every call.
class FakeApi {
 public:
  FakeApi(std::vector<json> nodes, std::vector<json> pods) : nodes_(std::move(nodes)), pods_(std::move(pods)) {
    srv_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.set_content(testing::list_json(nodes_).dump(), "application/json");
    });
    srv_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard l(mu_);
      calls_.push_back({req.method, req.path, req.body, req.get_header_value("Content-Type"),
                        req.get_header_value("Authorization")});
      res.set_content(testing::list_json(pods_).dump(), "application/json");
    });
    srv_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 record(req);
                 std::lock_guard l(mu_);
                 json* pod = find(req.matches[1], req.matches[2]);
                 if (!pod) {
                   res.status = 404;
                   res.set_content(R"({"kind":"Status","message":"pods not found"})", "application/json");
                   return;
                 }
                 pod->merge_patch(json::parse(req.body));
                 res.set_content(pod->dump(), "application/json");
               });
    srv_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
              [this](const httplib::Request& req, httplib::Response& res) {
                record(req);
                std::lock_guard l(mu_);
                json* pod = find(req.matches[1], req.matches[2]);
                json b = json::parse(req.body);
                if (!pod || fail_bindings_) {
                  res.status = 409;
                  res.set_content(R"({"kind":"Status","message":"binding refused"})", "application/json");
                  return;
                }
                (*pod)["spec"]["nodeName"] = b["target"]["name"];
                (*pod)["status"]["phase"] = "Running";
                res.status = 201;
                res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
              });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    // stop() before the loop runs would be lost and join() would hang.
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~FakeApi() {
    srv_.stop();
    thread_.join();
  }
  struct Call {
    std::string method, path, body, content_type, authorization;
  };
  std::vector<Call> calls() {
    std::lock_guard l(mu_);
    return calls_;
  }
  std::vector<json> pods() {
    std::lock_guard l(mu_);
    return pods_;
  }
  void add_pod(json p) {
    std::lock_guard l(mu_);
    pods_.push_back(std::move(p));
  }
  void fail_bindings(bool on) {
    std::lock_guard l(mu_);
    fail_bindings_ = on;
  }
  KubeConfig config() const { return {"http://127.0.0.1:" + std::to_string(port_), "secret-token", "", "", false}; }

 private:
  void record(const httplib::Request& req) {
    std::lock_guard l(mu_);
    calls_.push_back(
        {req.method, req.path, req.body, req.get_header_value("Content-Type"), req.get_header_value("Authorization")});
  }
  json* find(const std::string& ns, const std::string& name) {
    for (json& p : pods_)
      if (p["metadata"]["namespace"] == ns && p["metadata"]["name"] == name) return &p;
    return nullptr;
  }
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<json> nodes_, pods_;
  std::vector<Call> calls_;
  bool fail_bindings_ = false;
};

TEST(KubeClient, BinderPatchesTheAnnotationThenCreatesTheBinding) {
  FakeApi api({node_json({"a100-0"})}, {pod_json({.name = "p", .uid = "u-p", .gpus = 1})});
  KubeClient client(api.config());
  KubeBinder binder(client);
  K8sPod pod = parse_pod(pod_json({.name = "p", .uid = "u-p", .gpus = 1}));
  EXPECT_EQ(binder.bind(pod, "a100-0", "a100-0:3"), "");
  auto calls = api.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].method, "PATCH");
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/ml/pods/p");
  EXPECT_EQ(calls[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(calls[0].authorization, "Bearer secret-token");
  EXPECT_EQ(json::parse(calls[0].body),
            json::parse(R"({"metadata":{"annotations":{"gpupack.io/assigned-gpus":"a100-0:3"}}})"));
  EXPECT_EQ(calls[1].method, "POST");
  EXPECT_EQ(calls[1].path, "/api/v1/namespaces/ml/pods/p/binding");
  json b = json::parse(calls[1].body);
  EXPECT_EQ(b["kind"], "Binding");
  EXPECT_EQ(b["apiVersion"], "v1");
  EXPECT_EQ(b["metadata"]["name"], "p");
  EXPECT_EQ(b["metadata"]["uid"], "u-p");
  EXPECT_EQ(b["target"], json::parse(R"({"apiVersion":"v1","kind":"Node","name":"a100-0"})"));
  json stored = api.pods()[0];
  EXPECT_EQ(stored["spec"]["nodeName"], "a100-0");
  EXPECT_EQ(stored["metadata"]["annotations"]["gpupack.io/assigned-gpus"], "a100-0:3");
}

TEST(KubeClient, ApiErrorsAndUnreachableServersAreReported) {
  FakeApi api({}, {});
  KubeClient client(api.config());
  std::string err = client.create_binding("ml", "missing", "", "n");
  EXPECT_NE(err.find("HTTP 409"), std::string::npos) << err;
  EXPECT_NE(err.find("binding refused"), std::string::npos) << err;
  KubeClient nowhere({"http://127.0.0.1:1", "", "", "", false}, 2);
  EXPECT_FALSE(nowhere.list_nodes().error.empty());
}

// Names go into API paths only when they are valid Kubernetes names: no
// name can reach another path ("x/../../..", an encoded slash, a dot).
TEST(KubeClient, NamesThatAreNotKubernetesNamesNeverReachTheApi) {
  FakeApi api({}, {});
  KubeClient client(api.config());
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{{"ml", "x/../../.."},
                                                                                 {"ml", ".."},
                                                                                 {"ml", "a%2Fb"},
                                                                                 {"kube-system/..", "p"},
                                                                                 {"", "p"},
                                                                                 {"ml", ""},
                                                                                 {"ml", "UPPER"},
                                                                                 {"ml", "-lead"},
                                                                                 {"ml.dot", "p"},
                                                                                 {"ml", std::string(254, 'a')}}) {
    const std::string err = client.create_binding(ns, name, "", "n");
    EXPECT_NE(err.find("no request sent"), std::string::npos) << ns << "/" << name << ": " << err;
    EXPECT_NE(client.patch_pod_annotations(ns, name, {{"k", "v"}}).find("no request sent"), std::string::npos);
    // The defrag executor's calls check their names the same way.
    EXPECT_NE(client.evict_pod(ns, name, "").error.find("no request sent"), std::string::npos);
    if (!ns.empty() && ns.find('/') == std::string::npos && ns != "ml.dot") {
      const std::string node_err = client.patch_node_annotations(name, {{"k", "v"}});
      EXPECT_NE(node_err.find("PATCH node: node name"), std::string::npos) << name << ": " << node_err;
    }
  }
  EXPECT_TRUE(api.calls().empty());
  // Valid names with dots and dashes go through (and reach the fake's 409).
  EXPECT_NE(client.create_binding("ml-2", "job-0.worker-1", "", "n").find("HTTP 409"), std::string::npos);
  ASSERT_EQ(api.calls().size(), 1u);
  EXPECT_EQ(api.calls()[0].path, "/api/v1/namespaces/ml-2/pods/job-0.worker-1/binding");
}

TEST(KubeClient, ReadsTheCurrentContextOfAKubeconfig) {
  const std::string path = ::testing::TempDir() + "/kubeconfig-test.yaml";
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: "https://dev:6443"}
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: aGVsbG8=
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin}
users:
- name: admin
  user: {token: abc123}
)";
  KubeConfig c = read_kubeconfig(path);
  EXPECT_EQ(c.server, "https://10.0.0.1:6443");
  EXPECT_EQ(c.token, "abc123");
  EXPECT_EQ(c.ca_data, "hello");
  std::ofstream(path) << "current-context: nope\ncontexts: []\n";
  EXPECT_THROW(read_kubeconfig(path), std::invalid_argument);
  std::filesystem::remove(path);
}

TEST(KubeClient, ServeAgainstTheApiBindsAndRestartsIdentically) {
  std::vector<json> nodes = {node_json({"a100-0"}), node_json({"a100-1"})};
  FakeApi api(nodes, {});
  KubeClient client(api.config());
  KubeBinder binder(client);
  auto load = [&](ExtenderService& s) {
    auto n = client.list_nodes();
    auto p = client.list_pods();
    ASSERT_EQ(n.error, "");
    ASSERT_EQ(p.error, "");
    s.set_cluster(parse_node_list(n.body, "nodes"), parse_pod_list(p.body, "pods"));
  };
  ExtenderService service("fgd");
  load(service);
  service.set_binder(&binder);
  LatencyHistogram l;
  RequestCounters rc;
  HttpOptions o;
  o.port = 0;
  HttpServer server(service, o, l, rc);
  httplib::Client http("127.0.0.1", server.start());
  for (int i = 0; i < 10; ++i) {
    json pod = pod_json({.name = "job-" + std::to_string(i), .gpus = i % 2 ? 0 : 1, .gpu_milli = i % 2 ? 500 : 0});
    api.add_pod(pod);
    json args = {{"Pod", pod}, {"NodeNames", {"a100-0", "a100-1"}}};
    auto f = http.Post("/filter", args.dump(), "application/json");
    ASSERT_EQ(f->status, 200);
    json bind = {{"PodName", pod["metadata"]["name"]},
                 {"PodNamespace", "ml"},
                 {"PodUID", pod["metadata"]["uid"]},
                 {"Node", i < 5 ? "a100-0" : "a100-1"}};
    auto b = http.Post("/bind", bind.dump(), "application/json");
    ASSERT_EQ(json::parse(b->body)["Error"], "") << b->body;
  }
  // A refused Binding undoes the model change and reports the API's words.
  api.fail_bindings(true);
  json pod = pod_json({.name = "refused", .gpus = 1});
  api.add_pod(pod);
  http.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"a100-0"}}}.dump(), "application/json");
  auto b = http.Post(
      "/bind",
      json{{"PodName", "refused"}, {"PodNamespace", "ml"}, {"PodUID", "uid-refused"}, {"Node", "a100-0"}}.dump(),
      "application/json");
  EXPECT_NE(json::parse(b->body)["Error"].get<std::string>().find("binding refused"), std::string::npos);
  EXPECT_EQ(service.assignments().count("ml/refused"), 0u);
  server.stop();

  const auto before = service.assignments();
  ASSERT_EQ(before.size(), 10u);
  ExtenderService restarted("fgd");
  load(restarted);
  EXPECT_TRUE(restarted.unattributed().empty());
  EXPECT_EQ(restarted.assignments(), before);
}

}  // namespace
}  // namespace gpupack
