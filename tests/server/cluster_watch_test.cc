// ClusterWatch against a fake API server that serves lists and streams watch
// events: events reach the service, a closed watch reopens from the last
// resourceVersion, 410 Gone relists, binds survive stale objects, stop() is
// prompt, and a failing first list is an error naming the call.
#include "server/cluster_watch.h"

#include <gtest/gtest.h>

#include <chrono>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "server/httplib_config.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

// Lists and watch streams for nodes, pods and (when given) DRA
// ResourceClaims. Events pushed with send() go to the open watch of that
// kind; close() ends it (the client reopens). Without claims their path is
// a 404, as on a cluster that does not serve resource.k8s.io/v1.
class WatchingApi {
 public:
  WatchingApi(std::vector<json> nodes, std::vector<json> pods, std::optional<std::vector<json>> claims = {}) {
    lists_["nodes"] = std::move(nodes);
    lists_["pods"] = std::move(pods);
    std::vector<std::pair<std::string, std::string>> kinds = {{"nodes", "/api/v1/nodes"}, {"pods", "/api/v1/pods"}};
    if (claims) {
      lists_["resourceclaims"] = std::move(*claims);
      kinds.emplace_back("resourceclaims", "/apis/resource.k8s.io/v1/resourceclaims");
    }
    for (const auto& [kind_name, path] : kinds) {
      srv_.Get(path, [this, kind = kind_name](const httplib::Request& req, httplib::Response& res) {
        if (!req.has_param("watch")) {
          std::lock_guard l(mu_);
          ++list_calls_[kind];
          if (fail_lists_) {
            res.status = 403;
            res.set_content(R"({"kind":"Status","message":"nodes is forbidden"})", "application/json");
            return;
          }
          json list = testing::list_json(lists_[kind]);
          list["metadata"] = {{"resourceVersion", std::to_string(++rv_)}};
          res.set_content(list.dump(), "application/json");
          return;
        }
        {
          std::lock_guard l(mu_);
          watch_versions_[kind].push_back(req.get_param_value("resourceVersion"));
          close_[kind] = false;
        }
        cv_.notify_all();
        res.set_chunked_content_provider("application/json", [this, kind](size_t, httplib::DataSink& sink) {
          std::unique_lock l(mu_);
          cv_.wait_for(l, std::chrono::milliseconds(50),
                       [&] { return shutdown_ || close_[kind] || !queue_[kind].empty(); });
          if (shutdown_) return false;
          while (!queue_[kind].empty()) {
            const std::string line = queue_[kind].front() + "\n";
            queue_[kind].pop_front();
            sink.write(line.data(), line.size());
          }
          if (close_[kind]) sink.done();
          return true;
        });
      });
    }
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    // stop() before the loop runs would be lost and join() would hang.
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~WatchingApi() {
    {
      std::lock_guard l(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    srv_.stop();
    thread_.join();
  }
  // Sends a watch event; the object gets the next resourceVersion.
  std::string send(const std::string& kind, const std::string& type, json object) {
    std::lock_guard l(mu_);
    const std::string rv = std::to_string(++rv_);
    object["metadata"]["resourceVersion"] = rv;
    queue_[kind].push_back(json{{"type", type}, {"object", object}}.dump());
    cv_.notify_all();
    return rv;
  }
  void send_raw(const std::string& kind, const std::string& line) {
    std::lock_guard l(mu_);
    queue_[kind].push_back(line);
    cv_.notify_all();
  }
  void close(const std::string& kind) {
    std::lock_guard l(mu_);
    close_[kind] = true;
    cv_.notify_all();
  }
  void set_list(const std::string& kind, std::vector<json> items) {
    std::lock_guard l(mu_);
    lists_[kind] = std::move(items);
  }
  void fail_lists(bool on) {
    std::lock_guard l(mu_);
    fail_lists_ = on;
  }
  int list_calls(const std::string& kind) {
    std::lock_guard l(mu_);
    return list_calls_[kind];
  }
  std::vector<std::string> watch_versions(const std::string& kind) {
    std::lock_guard l(mu_);
    return watch_versions_[kind];
  }
  KubeConfig config() const { return {"http://127.0.0.1:" + std::to_string(port_), "t", "", "", false}; }

 private:
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<json>> lists_;
  std::map<std::string, std::deque<std::string>> queue_;
  std::map<std::string, bool> close_;
  std::map<std::string, int> list_calls_;
  std::map<std::string, std::vector<std::string>> watch_versions_;
  int rv_ = 100;
  bool shutdown_ = false;
  bool fail_lists_ = false;
};

// Waits up to 5 s for `cond`.
bool eventually(const std::function<bool()>& cond) {
  for (int i = 0; i < 250; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

class ClusterWatchTest : public ::testing::Test {
 protected:
  ClusterWatchTest()
      : api_({node_json({"a"}), node_json({"b"})},
             {pod_json({.name = "running", .gpus = 4, .node = "a", .assigned = "a:0,1,2,3"})}),
        client_(api_.config()) {}
  void start(int relist_s = 0) {
    WatchOptions o;
    o.flush_ms = 20;
    o.retry_ms = 100;
    o.relist_s = relist_s;
    watch_ = std::make_unique<ClusterWatch>(client_, service_, o);
    watch_->start();
    ASSERT_TRUE(eventually(
        [&] { return api_.watch_versions("pods").size() == 1 && api_.watch_versions("nodes").size() == 1; }));
  }
  std::map<std::string, std::string> assignments() { return service_.assignments(); }

  WatchingApi api_;
  KubeClient client_;
  ExtenderService service_{"bestfit"};
  std::unique_ptr<ClusterWatch> watch_;
};

TEST_F(ClusterWatchTest, ListThenEventsReachTheService) {
  start();
  EXPECT_EQ(assignments(), (std::map<std::string, std::string>{{"ml/running", "a:0,1,2,3"}}));
  // The watch starts from the list's resourceVersion.
  EXPECT_FALSE(api_.watch_versions("pods")[0].empty());

  api_.send("pods", "ADDED", pod_json({.name = "new", .gpus = 2, .node = "b", .assigned = "b:0,1"}));
  EXPECT_TRUE(eventually([&] { return assignments().count("ml/new") == 1; }));
  api_.send("pods", "DELETED", pod_json({.name = "running", .gpus = 4, .node = "a", .assigned = "a:0,1,2,3"}));
  EXPECT_TRUE(eventually([&] { return assignments().count("ml/running") == 0; }));
  EXPECT_EQ(assignments().count("ml/new"), 1u);
  // Pod events changed the model in place; every other flush (a relist after
  // a failed watch, on a loaded machine) rebuilt it, as did the first list.
  EXPECT_GE(watch_->stats().pod_updates, 1u);
  EXPECT_TRUE(eventually([&] {
    const ClusterWatch::Stats st = watch_->stats();
    const ServiceMetrics m = service_.metrics();
    return m.model_pod_updates == st.pod_updates && m.model_reloads == 1 + st.flushes - st.pod_updates;
  }));

  api_.send("nodes", "ADDED", node_json({"c"}));
  EXPECT_TRUE(eventually([&] { return service_.metrics().node_count == 3; }));
  api_.send("nodes", "DELETED", node_json({"b"}));
  EXPECT_TRUE(eventually([&] { return service_.metrics().node_count == 2; }));
  EXPECT_GE(service_.metrics().model_reloads, 2u);  // node changes rebuild
  EXPECT_GE(watch_->stats().events, 4u);
  EXPECT_GE(watch_->stats().flushes, 1u);
}

// --full-reloads: every flush rebuilds the whole model.
TEST_F(ClusterWatchTest, FullReloadsRebuildForPodEventsToo) {
  WatchOptions o;
  o.flush_ms = 20;
  o.pod_updates_in_place = false;
  watch_ = std::make_unique<ClusterWatch>(client_, service_, o);
  watch_->start();
  ASSERT_TRUE(eventually([&] { return api_.watch_versions("pods").size() == 1; }));
  api_.send("pods", "ADDED", pod_json({.name = "new", .gpus = 2, .node = "b", .assigned = "b:0,1"}));
  EXPECT_TRUE(eventually([&] { return assignments().count("ml/new") == 1; }));
  EXPECT_EQ(watch_->stats().pod_updates, 0u);
  EXPECT_EQ(service_.metrics().model_pod_updates, 0u);
  EXPECT_GE(service_.metrics().model_reloads, 2u);
}

TEST_F(ClusterWatchTest, AClosedWatchReopensFromTheLastVersion) {
  start();
  const std::string rv =
      api_.send("pods", "MODIFIED", pod_json({.name = "running", .gpus = 4, .node = "a", .assigned = "a:4,5,6,7"}));
  EXPECT_TRUE(eventually([&] { return assignments()["ml/running"] == "a:4,5,6,7"; }));
  api_.close("pods");
  ASSERT_TRUE(eventually([&] { return api_.watch_versions("pods").size() == 2; }));
  EXPECT_EQ(api_.watch_versions("pods")[1], rv);
  EXPECT_EQ(api_.list_calls("pods"), 1);  // no relist needed
  // Bookmarks move the version without changing anything.
  json bookmark = {{"kind", "Pod"}, {"metadata", json::object()}};
  const std::string bm = api_.send("pods", "BOOKMARK", bookmark);
  api_.close("pods");
  ASSERT_TRUE(eventually([&] { return api_.watch_versions("pods").size() == 3; }));
  EXPECT_EQ(api_.watch_versions("pods")[2], bm);
}

TEST_F(ClusterWatchTest, GoneRelistsAndTheListWins) {
  start();
  api_.set_list("pods", {pod_json({.name = "listed", .gpus = 1, .node = "b", .assigned = "b:7"})});
  api_.send_raw("pods",
                R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version"}})");
  EXPECT_TRUE(eventually([&] { return api_.list_calls("pods") == 2; }));
  EXPECT_TRUE(eventually([&] { return assignments() == std::map<std::string, std::string>{{"ml/listed", "b:7"}}; }));
  EXPECT_TRUE(eventually([&] { return api_.watch_versions("pods").size() == 2; }));
}

TEST_F(ClusterWatchTest, PeriodicRelistReopensTheWatchFromTheNewList) {
  start(1);
  api_.set_list("pods", {pod_json({.name = "listed", .gpus = 1, .node = "b", .assigned = "b:7"})});
  // Within about a second both kinds are listed again and watched anew.
  EXPECT_TRUE(eventually([&] { return api_.list_calls("pods") >= 2 && api_.list_calls("nodes") >= 2; }));
  EXPECT_TRUE(eventually([&] { return api_.watch_versions("pods").size() >= 2; }));
  EXPECT_TRUE(eventually([&] { return assignments() == std::map<std::string, std::string>{{"ml/listed", "b:7"}}; }));
  const auto versions = api_.watch_versions("pods");
  EXPECT_NE(versions[0], versions[1]);  // the second watch starts at the new list's version
}

// Heartbeats and status conditions change nothing gpupack reads: no reload.
TEST_F(ClusterWatchTest, EventsThatChangeNothingReadAreNotReloaded) {
  start();
  json pod = pod_json({.name = "running", .gpus = 4, .node = "a", .assigned = "a:0,1,2,3"});
  pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  api_.send("pods", "MODIFIED", pod);
  json node = node_json({"a"});
  node["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-30T10:00:00Z";
  api_.send("nodes", "MODIFIED", node);
  EXPECT_TRUE(eventually([&] { return watch_->stats().unchanged == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(watch_->stats().flushes, 0u);
  // A change gpupack reads (the node's Ready condition) does reload.
  node["status"]["conditions"][0]["status"] = "False";
  api_.send("nodes", "MODIFIED", node);
  EXPECT_TRUE(eventually([&] { return watch_->stats().flushes == 1; }));
  EXPECT_EQ(watch_->stats().unchanged, 2u);
}

TEST_F(ClusterWatchTest, AnUnreadableObjectIsDroppedAndCounted) {
  start();
  json bad = pod_json({.name = "running", .gpus = 4, .node = "a", .assigned = "a:0,1,2,3"});
  bad["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "lots";
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  api_.send("pods", "MODIFIED", bad);
  EXPECT_TRUE(eventually([&] { return assignments().count("ml/running") == 0; }));
  EXPECT_EQ(watch_->stats().rejected, 1u);
  EXPECT_NE(watch_->stats().last_error.find("lots"), std::string::npos) << watch_->stats().last_error;
}

TEST_F(ClusterWatchTest, ABindHereSurvivesTheWatchCatchingUp) {
  api_.set_list("pods", {pod_json({.name = "job", .gpus = 8})});
  start();
  ASSERT_EQ(service_.bind(ExtenderBindingArgs{"job", "ml", "uid-job", "b"}).error, "");
  // An unrelated change flushes the (still pending) pod object again.
  api_.send("pods", "ADDED", pod_json({.name = "other", .cpu = "1"}));
  EXPECT_TRUE(eventually([&] { return watch_->stats().flushes >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ASSERT_EQ(assignments().count("ml/job"), 1u);
  EXPECT_EQ(assignments()["ml/job"].substr(0, 2), "b:");
}

TEST_F(ClusterWatchTest, AListNamesWhatItSkipped) {
  json bad = pod_json({.name = "broken", .gpus = 1});
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  bad["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "lots";
  api_.set_list("pods", {pod_json({.name = "fine", .gpus = 1, .node = "a", .assigned = "a:0"}), bad});
  start();
  EXPECT_EQ(assignments().count("ml/fine"), 1u);
  EXPECT_EQ(watch_->stats().rejected, 1u);
  const std::string error = watch_->stats().last_error;
  EXPECT_NE(error.find("GET /api/v1/pods: skipped 1 object(s)"), std::string::npos) << error;
  EXPECT_NE(error.find("ml/broken"), std::string::npos) << error;
}

TEST_F(ClusterWatchTest, StopIsPromptWhileTheStreamIsIdle) {
  start();
  const auto t0 = std::chrono::steady_clock::now();
  watch_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST_F(ClusterWatchTest, AFailingFirstListIsAnErrorNamingTheCall) {
  api_.fail_lists(true);
  ClusterWatch w(client_, service_);
  try {
    w.start();
    FAIL() << "start() should throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("listing nodes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("403"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(service_.ready());
}

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

TEST(ClusterWatchClaims, DraClaimsAreListedWatchedAndChargedToTheirPods) {
  WatchingApi api({node_json({.name = "node-a", .gpus = 8})},
                  {testing::pod_with_claims({.name = "dra", .cpu = "1", .node = "node-a"}, {"c1"})},
                  std::vector<json>{testing::claim_json("ml", "c1", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, {"dra"})});
  KubeClient client(api.config());
  ExtenderService service("bestfit");
  WatchOptions o;
  o.flush_ms = 20;
  o.retry_ms = 100;
  ClusterWatch watch(client, service, o);
  watch.start();
  EXPECT_EQ(watch.stats().claims, "watched");
  EXPECT_EQ(service.assignments().at("ml/dra"), "node-a:0,1,2,3");
  ASSERT_TRUE(eventually([&] { return api.watch_versions("resourceclaims").size() == 1; }));

  // A second DRA pod, then its claim: charged once the claim arrives.
  api.send("pods", "ADDED", testing::pod_with_claims({.name = "dra2", .cpu = "1", .node = "node-a"}, {"c2"}));
  api.send("resourceclaims", "ADDED", testing::claim_json("ml", "c2", {"gpu-6", "gpu-7"}, {"dra2"}));
  EXPECT_TRUE(eventually([&] { return service.assignments().count("ml/dra2") == 1; }));
  EXPECT_EQ(service.assignments().at("ml/dra2"), "node-a:6,7");
  ExtenderArgs a;
  a.pod = pod_json({.name = "want-3", .cpu = "1", .gpus = 3});
  a.node_names = std::vector<std::string>{"node-a"};
  EXPECT_TRUE(service.filter(a).node_names->empty()) << "6 of 8 GPUs are held through DRA";

  // The first claim goes away: its pod names a claim that is not there.
  api.send("resourceclaims", "DELETED", testing::claim_json("ml", "c1", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, {"dra"}));
  EXPECT_TRUE(eventually([&] { return !watch.stats().claim_notes.empty(); }));
  EXPECT_NE(watch.stats().claim_notes.at(0).find("ml/dra: ResourceClaim c1"), std::string::npos)
      << watch.stats().claim_notes.at(0);
  EXPECT_TRUE(eventually([&] { return service.filter(a).node_names->size() == 1; }));
  watch.stop();
}

TEST(ClusterWatchClaims, AClusterWithoutDraStillStarts) {
  WatchingApi api({node_json({.name = "node-a", .gpus = 8})}, {});
  KubeClient client(api.config());
  ExtenderService service("bestfit");
  ClusterWatch watch(client, service);
  watch.start();
  EXPECT_EQ(watch.stats().claims, "not served");
  EXPECT_EQ(watch.stats().last_error, "");
  watch.stop();
}

}  // namespace
}  // namespace gpupack
