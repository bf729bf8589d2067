// set_cluster() called again while serving (relist, watch): binds made here
// survive stale objects, the API's own version wins once it shows the pod
// bound, deleted pods free their GPUs, first-seen times are kept.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

class ServiceSync : public ::testing::Test {
 protected:
  void sync(const std::vector<json>& pods) {
    std::vector<K8sNode> n = {parse_node(node_json({"a"})), parse_node(node_json({"b"}))};
    std::vector<K8sPod> p;
    for (const json& j : pods) p.push_back(parse_pod(j));
    service_.set_cluster(std::move(n), std::move(p), pods);
  }
  std::string bind(const std::string& name, const std::string& node) {
    return service_.bind(ExtenderBindingArgs{name, "ml", "uid-" + name, node}).error;
  }
  ExtenderService service_{"bestfit"};
};

TEST_F(ServiceSync, BindMadeHereSurvivesAStaleList) {
  const json pending = pod_json({.name = "job", .gpus = 8});
  sync({pending});
  ASSERT_EQ(bind("job", "a"), "");
  ASSERT_EQ(service_.assignments().count("ml/job"), 1u);
  const std::string assigned = service_.assignments().at("ml/job");

  // The list still shows the pod pending: the bind is kept, node a stays full.
  sync({pending});
  ASSERT_EQ(service_.assignments().count("ml/job"), 1u);
  EXPECT_EQ(service_.assignments().at("ml/job"), assigned);
  sync({pending, pod_json({.name = "next", .gpus = 8})});
  EXPECT_NE(bind("next", "a"), "");  // a is full
  EXPECT_EQ(bind("next", "b"), "");
  // The written-back object carries the kept bind too.
  bool seen = false;
  const json written = service_.pod_list_json();
  for (const json& p : written["items"])
    if (p["metadata"]["name"] == "job") {
      seen = true;
      EXPECT_EQ(p["spec"]["nodeName"], "a");
      EXPECT_EQ(p["metadata"]["annotations"]["gpupack.io/assigned-gpus"], assigned);
    }
  EXPECT_TRUE(seen);
}

TEST_F(ServiceSync, TheApisVersionWinsOnceItShowsTheBind) {
  sync({pod_json({.name = "job", .gpus = 4})});
  ASSERT_EQ(bind("job", "a"), "");
  // The API shows the pod bound elsewhere (someone else's decision): theirs.
  sync({pod_json({.name = "job", .gpus = 4, .node = "b", .assigned = "b:4,5,6,7"})});
  EXPECT_EQ(service_.assignments().at("ml/job"), "b:4,5,6,7");
  // And from then on a stale pending object no longer resurrects ours.
  sync({pod_json({.name = "job", .gpus = 4})});
  EXPECT_EQ(service_.assignments().count("ml/job"), 0u);
}

TEST_F(ServiceSync, DeletedPodsFreeTheirGpus) {
  sync({pod_json({.name = "job", .gpus = 8})});
  ASSERT_EQ(bind("job", "a"), "");
  sync({});  // deleted
  EXPECT_TRUE(service_.assignments().empty());
  sync({pod_json({.name = "other", .gpus = 8})});
  EXPECT_EQ(bind("other", "a"), "");
}

TEST_F(ServiceSync, ARecreatedPodWithANewUidIsNotTheBoundOne) {
  sync({pod_json({.name = "job", .gpus = 8})});
  ASSERT_EQ(bind("job", "a"), "");
  sync({pod_json({.name = "job", .uid = "uid-new", .gpus = 8})});
  EXPECT_EQ(service_.assignments().count("ml/job"), 0u);
}

// Reloads running while binds happen (a watch flushing): no bind is lost and
// no GPU is given twice, whatever the interleaving.
TEST_F(ServiceSync, BindsDuringReloadsAreNeverLost) {
  std::vector<json> pending;
  for (int i = 0; i < 16; ++i) pending.push_back(pod_json({.name = "p" + std::to_string(i), .gpus = 1}));
  for (int round = 0; round < 8; ++round) {
    sync({});  // everything deleted: a clean start
    sync(pending);
    std::atomic<bool> done{false};
    std::atomic<int> reloads{0};
    std::thread reloader([&] {
      while (!done) {
        sync(pending);  // the API still shows every pod pending
        ++reloads;
      }
    });
    for (int i = 0; i < 16; ++i) {
      // Bind a little after a reload finished, while the next one is being
      // built (the pace differs from round to round).
      const int seen = reloads;
      while (reloads == seen) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::microseconds(50 * (round + 1)));
      const std::string name = "p" + std::to_string(i);
      EXPECT_EQ(bind(name, i < 8 ? "a" : "b"), "") << "round " << round << ", " << name;
    }
    done = true;
    reloader.join();
    sync(pending);  // one more stale reload after the last bind
    const auto a = service_.assignments();
    ASSERT_EQ(a.size(), 16u) << "round " << round;
    std::set<std::string> gpus;
    for (const auto& [pod, where] : a) gpus.insert(where);
    EXPECT_EQ(gpus.size(), 16u) << "round " << round << ": a GPU was given twice";
  }
}

// A pod the scheduler shows before the watch does (a lagging watch): a
// reload without it neither forgets it before its bind nor frees its GPUs
// after.
TEST_F(ServiceSync, APodOnlyTheSchedulerShowedSurvivesReloads) {
  sync({});
  auto filter = [&](const json& pod) {
    auto args = parse_extender_args(json{{"Pod", pod}, {"NodeNames", {"a", "b"}}}.dump());
    ASSERT_TRUE(args.ok()) << args.error().what();
    ExtenderFilterResult r = service_.filter(args.value());
    EXPECT_EQ(r.error, "");
  };
  filter(pod_json({.name = "early", .gpus = 8}));
  sync({});  // the watch has not seen it yet
  ASSERT_EQ(bind("early", "a"), "");
  sync({});  // still not
  ASSERT_EQ(service_.assignments().count("ml/early"), 1u);
  filter(pod_json({.name = "next", .gpus = 8}));
  EXPECT_NE(bind("next", "a"), "");  // a is still full
  // Once the objects have shown the pod, its absence means it was deleted.
  sync({pod_json({.name = "early", .gpus = 8, .node = "a", .assigned = service_.assignments().at("ml/early")})});
  sync({});
  EXPECT_EQ(service_.assignments().count("ml/early"), 0u);
  EXPECT_EQ(bind("next", "a"), "");
}

TEST_F(ServiceSync, PendingPodsKeepTheirAge) {
  sync({pod_json({.name = "wait", .gpus = 16})});  // fits nowhere
  auto age = [&] {
    for (const auto& p : service_.metrics().pending)
      if (p.name == "wait") return p.age_seconds;
    return -1.0;
  };
  const double before = age();
  ASSERT_GE(before, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  sync({pod_json({.name = "wait", .gpus = 16})});
  EXPECT_GE(age(), before + 0.04);
}

}  // namespace
}  // namespace gpupack
