// ExtenderService::update_pods (watch events applied in place) against
// set_cluster (the whole model rebuilt): after every batch of random pod
// events, the two services hold the same placements, GPUs, messages and
// answer filter, prioritize and bind alike; update_pods refuses, changing
// nothing, what only a rebuild can do.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyze/cluster_model.h"
#include "io/kubectl.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;
using testing::PodShape;

std::vector<json> test_nodes() {
  return {node_json({"a"}),
          node_json({"b"}),
          node_json({.name = "c", .product = "Tesla-T4", .gpus = 4, .cpu = "32", .memory = "128Gi"}),
          node_json({.name = "d", .product = "Tesla-T4", .gpus = 4, .cpu = "32", .memory = "128Gi"}),
          node_json({.name = "e", .product = "Tesla-V100-SXM2-32GB", .gpus = 8, .cpu = "64"}),
          node_json({.name = "cpu", .gpus = 0, .cpu = "64"})};
}

// The API's side: a store of pod objects keyed "ml/<name>" (names sort in
// creation order, as the watch store lists them), and the keys changed since
// the last flush.
struct Api {
  std::map<std::string, json> pods;
  std::set<std::string> changed;
  int created = 0;

  std::string add(PodShape shape) {
    shape.name = "p" + std::to_string(1000 + created++);
    const std::string key = "ml/" + shape.name;
    pods[key] = pod_json(shape);
    changed.insert(key);
    return key;
  }
  void set(const std::string& key, json object) {
    pods[key] = std::move(object);
    changed.insert(key);
  }
  void erase(const std::string& key) {
    pods.erase(key);
    changed.insert(key);
  }
};

std::vector<K8sNode> parsed_nodes() {
  std::vector<K8sNode> out;
  for (const json& n : test_nodes()) out.push_back(parse_node(n));
  return out;
}

void rebuild(ExtenderService& s, const Api& api) {
  std::vector<K8sPod> pods;
  std::vector<json> objects;
  for (const auto& [key, object] : api.pods) {
    pods.push_back(parse_pod(object));
    objects.push_back(object);
  }
  s.set_cluster(parsed_nodes(), std::move(pods), std::move(objects));
}

std::vector<ExtenderService::PodChange> changes_of(const Api& api) {
  std::vector<ExtenderService::PodChange> out;
  for (const std::string& key : api.changed) {
    auto it = api.pods.find(key);
    if (it == api.pods.end())
      out.push_back({key, {}, {}, true});
    else
      out.push_back({key, parse_pod(it->second), it->second, false});
  }
  return out;
}

// The pods named in messages, with how many messages each has (a conflict's
// text describes its node when the pod was judged, which a later bind here
// changes; which pods could not be charged must agree).
std::map<std::string, int> named_pods(const std::vector<std::string>& messages) {
  std::map<std::string, int> out;
  for (const std::string& m : messages) ++out[m.substr(0, m.find(": "))];
  return out;
}

ExtenderArgs args_for(const json& pod) {
  ExtenderArgs a;
  a.pod = pod;
  std::vector<std::string> names;
  for (const json& n : test_nodes()) names.push_back(n["metadata"]["name"]);
  a.node_names = names;
  return a;
}

void expect_same(ExtenderService& in_place, ExtenderService& rebuilt, const Api& api, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(in_place.placements(), rebuilt.placements());
  ASSERT_EQ(in_place.assignments(), rebuilt.assignments());
  ASSERT_EQ(named_pods(in_place.unattributed()), named_pods(rebuilt.unattributed()));
  const ServiceMetrics a = in_place.metrics(), b = rebuilt.metrics();
  ASSERT_EQ(a.bound_pods, b.bound_pods);
  ASSERT_EQ(a.cluster_free_milli, b.cluster_free_milli);
  ASSERT_DOUBLE_EQ(a.cluster_fragmentation_milli, b.cluster_fragmentation_milli);  // against the FGD target
  ASSERT_EQ(a.pending.size(), b.pending.size());
  // Every pending pod is judged alike by filter and prioritize (the FGD
  // target and the policy's view of every node agree).
  for (const auto& [key, object] : api.pods) {
    if (object["spec"].contains("nodeName")) continue;
    const ExtenderArgs args = args_for(object);
    const ExtenderFilterResult fa = in_place.filter(args), fb = rebuilt.filter(args);
    ASSERT_EQ(fa.node_names, fb.node_names) << key;
    ASSERT_EQ(fa.failed_nodes, fb.failed_nodes) << key;
    std::string ea, eb;
    ASSERT_EQ(in_place.prioritize(args, &ea), rebuilt.prioritize(args, &eb)) << key;
  }
}

PodShape random_shape(std::mt19937_64& rng) {
  PodShape s;
  const int kind = static_cast<int>(rng() % 6);
  if (kind == 0) {
    s.cpu = "2";
    s.memory = "4Gi";  // no GPUs
  } else if (kind <= 2) {
    s.gpu_milli = kind == 1 ? 250 : 500;
    s.cpu = std::to_string(1 + rng() % 4);
  } else {
    s.gpus = std::array{1, 2, 4, 8}[rng() % 4];
    s.cpu = std::to_string(2 * s.gpus + static_cast<int>(rng() % 3));
  }
  return s;
}

// One random step of the API's life: pods created, bound by gpupack (the
// annotation first, then the Binding), bound by another scheduler (with or
// without GPU ids), finished, deleted.
void random_step(std::mt19937_64& rng, Api& api, ExtenderService& in_place, ExtenderService& rebuilt) {
  std::vector<std::string> pending, bound;
  for (const auto& [key, object] : api.pods) (object["spec"].contains("nodeName") ? bound : pending).push_back(key);
  const int op = static_cast<int>(rng() % 10);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> node_names = {"a", "b", "c", "d", "e", "cpu"};
  if (op <= 2 || pending.empty()) {
    api.add(random_shape(rng));
  } else if (op <= 4) {
    // gpupack binds it: both services decide alike, then the API learns it
    // in two events (annotation, then nodeName).
    const std::string key = pick(pending);
    json object = api.pods[key];
    if (object["metadata"]["annotations"].contains("gpupack.io/assigned-gpus")) {
      const std::string node = in_place.placements().count(key) ? in_place.placements().at(key) : "";
      if (node.empty()) return;
      object["spec"]["nodeName"] = node;
      object["status"]["phase"] = "Running";
      api.set(key, object);
      return;
    }
    const ExtenderArgs args = args_for(object);
    std::string e1, e2;
    const HostPriorityList scores = in_place.prioritize(args, &e1);
    ASSERT_EQ(scores, rebuilt.prioritize(args, &e2));
    auto top = std::max_element(scores.begin(), scores.end(),
                                [](const HostPriority& x, const HostPriority& y) { return x.score < y.score; });
    if (top == scores.end() || top->score == 0) return;
    const std::string name = object["metadata"]["name"];
    const ExtenderBindingArgs b{name, "ml", object["metadata"]["uid"], top->host};
    const ExtenderBindingResult ra = in_place.bind(b), rb = rebuilt.bind(b);
    ASSERT_EQ(ra.error, rb.error);
    if (!ra.error.empty()) return;
    ASSERT_EQ(in_place.assignments(), rebuilt.assignments());
    const auto assigned = in_place.assignments();
    if (auto g = assigned.find(key); g != assigned.end())
      object["metadata"]["annotations"]["gpupack.io/assigned-gpus"] = g->second;
    else
      object["spec"]["nodeName"] = top->host;  // no GPUs: the Binding alone
    api.set(key, object);
  } else if (op == 5) {
    // Another scheduler binds it without saying which GPUs.
    json object = api.pods[pick(pending)];
    if (object["metadata"]["annotations"].contains("gpupack.io/assigned-gpus")) return;
    object["spec"]["nodeName"] = pick(node_names);
    object["status"]["phase"] = "Running";
    api.set(std::string("ml/") + object["metadata"]["name"].get<std::string>(), object);
  } else if (op == 6) {
    // Another scheduler's pod appears running with named GPUs (may conflict).
    PodShape s = random_shape(rng);
    s.node = pick({"a", "b", "e"});
    if (s.gpus > 0 || s.gpu_milli > 0) {
      const int n = std::max(1, s.gpus);
      const int first = static_cast<int>(rng() % static_cast<unsigned>(9 - n));
      std::string ids;
      for (int g = first; g < first + n; ++g) ids += (ids.empty() ? "" : ",") + std::to_string(g);
      s.assigned = s.node + ":" + ids;
    }
    api.add(s);
  } else if (op == 7 && !bound.empty()) {
    json object = api.pods[pick(bound)];
    object["status"]["phase"] = "Succeeded";
    api.set(std::string("ml/") + object["metadata"]["name"].get<std::string>(), object);
  } else if (!api.pods.empty()) {
    std::vector<std::string> all = pending;
    all.insert(all.end(), bound.begin(), bound.end());
    api.erase(pick(all));
  }
}

class PodUpdates : public ::testing::TestWithParam<std::string> {};

TEST_P(PodUpdates, InPlaceEqualsARebuildAfterEveryBatch) {
  int batches = 0, in_place_batches = 0;
  for (uint64_t seed : {1, 2, 3, 4}) {
    std::mt19937_64 rng(seed);
    ExtenderService in_place(GetParam()), rebuilt(GetParam());
    Api api;
    for (int i = 0; i < 12; ++i) api.add(random_shape(rng));
    api.add({.gpus = 4, .node = "a", .assigned = "a:0,1,2,3"});
    rebuild(in_place, api);
    rebuild(rebuilt, api);
    api.changed.clear();
    for (int batch = 0; batch < 60; ++batch) {
      const int steps = 1 + static_cast<int>(rng() % 3);
      for (int s = 0; s < steps; ++s) {
        random_step(rng, api, in_place, rebuilt);
        if (::testing::Test::HasFatalFailure()) return;
      }
      if (api.changed.empty()) continue;
      ++batches;
      if (in_place.update_pods(changes_of(api)))
        ++in_place_batches;
      else
        rebuild(in_place, api);
      rebuild(rebuilt, api);
      api.changed.clear();
      expect_same(in_place, rebuilt, api, "seed " + std::to_string(seed) + " batch " + std::to_string(batch));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // Most batches took the in-place path. The rest needed a rebuild: a pod
  // that moved or changed its GPUs, or a change on a node where another
  // scheduler's pod could not be charged (this mix over-commits often: its
  // foreign pods name random GPUs).
  EXPECT_GT(in_place_batches, batches / 2) << in_place_batches << " of " << batches;
}

INSTANTIATE_TEST_SUITE_P(Policies, PodUpdates, ::testing::Values("fgd", "bestfit", "capfrag", "dualfrag"));

class PodUpdatesRefused : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.add({.gpus = 2});
    api_.add({.gpus = 4, .node = "a", .assigned = "a:0,1,2,3"});
    rebuild(service_, api_);
    api_.changed.clear();
  }
  // update_pods refuses `c` and the model is as before.
  void expect_refused(ExtenderService::PodChange c) {
    const auto placements = service_.placements();
    const auto assignments = service_.assignments();
    const uint64_t mutations = service_.mutation_count();
    EXPECT_FALSE(service_.update_pods({std::move(c)}));
    EXPECT_EQ(service_.placements(), placements);
    EXPECT_EQ(service_.assignments(), assignments);
    EXPECT_EQ(service_.mutation_count(), mutations);
  }
  Api api_;
  ExtenderService service_{"fgd"};
};

TEST_F(PodUpdatesRefused, WhatOnlyARebuildCanDo) {
  // A pod that moved to other GPUs, or to another node.
  json moved = pod_json({.name = "p1001", .gpus = 4, .node = "a", .assigned = "a:4,5,6,7"});
  expect_refused({"ml/p1001", parse_pod(moved), moved, false});
  moved = pod_json({.name = "p1001", .gpus = 4, .node = "b", .assigned = "b:0,1,2,3"});
  expect_refused({"ml/p1001", parse_pod(moved), moved, false});
  // A gang member.
  json gang = pod_json({.name = "g1", .gpus = 1, .labels = {{"scheduling.x-k8s.io/pod-group", "train"}}});
  ASSERT_TRUE(parse_pod(gang).gang);
  expect_refused({"ml/g1", parse_pod(gang), gang, false});
  // DRA claims.
  json claims = testing::pod_with_claims({.name = "dra", .node = "a"}, {"c1"});
  expect_refused({"ml/dra", parse_pod(claims), claims, false});
  // A pod on a node the model does not have.
  json elsewhere = pod_json({.name = "x", .gpus = 1, .node = "zz"});
  expect_refused({"ml/x", parse_pod(elsewhere), elsewhere, false});
  // The same key twice in one batch.
  json p = pod_json({.name = "twice", .gpus = 1});
  EXPECT_FALSE(service_.update_pods({{"ml/twice", parse_pod(p), p, false}, {"ml/twice", parse_pod(p), p, false}}));
  EXPECT_EQ(service_.placements().count("ml/twice"), 0u);
  // A mistaken key.
  expect_refused({"ml/other", parse_pod(p), p, false});
  EXPECT_EQ(service_.metrics().model_pod_updates, 0u);
}

TEST_F(PodUpdatesRefused, AcceptedBatchesAreCounted) {
  json p = pod_json({.name = "new", .gpus = 1, .node = "b", .assigned = "b:3"});
  ASSERT_TRUE(service_.update_pods({{"ml/new", parse_pod(p), p, false}}));
  EXPECT_EQ(service_.assignments().at("ml/new"), "b:3");
  ASSERT_TRUE(service_.update_pods({{"ml/p1001", {}, {}, true}}));
  EXPECT_EQ(service_.assignments().count("ml/p1001"), 0u);
  EXPECT_EQ(service_.metrics().model_pod_updates, 2u);
  EXPECT_EQ(service_.metrics().model_reloads, 1u);
}

// The tally kept pod by pod equals expected_workload() over the pods counted,
// in sequence order, after random additions and removals.
TEST(WorkloadTally, EqualsTheTargetBuiltFromScratch) {
  std::mt19937_64 rng(7);
  WorkloadTally tally;
  std::map<uint64_t, K8sPod> live;  // seq -> pod
  uint64_t next = 0;
  for (int step = 0; step < 2000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      K8sPod p;
      p.name = "p" + std::to_string(next);
      const int32_t g = std::array{0, 1, 1, 2, 8}[rng() % 5];
      p.request = Request{1000LL * (1 + static_cast<int64_t>(rng() % 4)), 0, g,
                          g == 0 ? 0 : (rng() % 2 ? kGpuMilliPerGpu : 500), 0};
      live[next] = p;
      tally.add(next++, p.request);
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      tally.remove(it->first, it->second.request);
      live.erase(it);
    }
    std::vector<const K8sPod*> order;
    for (const auto& [seq, p] : live) order.push_back(&p);
    const auto want = expected_workload(order, {}, {});
    const auto got = tally.target();
    ASSERT_EQ(got->classes.size(), want->classes.size()) << step;
    for (size_t c = 0; c < want->classes.size(); ++c) {
      ASSERT_EQ(got->classes[c].cpu_milli, want->classes[c].cpu_milli) << step;
      ASSERT_EQ(got->classes[c].gpu_count, want->classes[c].gpu_count) << step;
      ASSERT_EQ(got->classes[c].gpu_milli, want->classes[c].gpu_milli) << step;
      ASSERT_EQ(got->classes[c].count, want->classes[c].count) << step;
      ASSERT_EQ(got->classes[c].popularity, want->classes[c].popularity) << step;
    }
  }
  EXPECT_THROW(tally.remove(next + 1, Request{}), std::logic_error);
}

}  // namespace
}  // namespace gpupack
