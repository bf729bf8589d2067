// Defragmentation reservations (node annotation reservation.gpupack.io/...,
// written by `gpupack defrag --apply`) as the extender honours them: the
// reserved GPUs are taken for every other pod, the pod they are for is
// steered to that node and may use them, a bind consumes the reservation
// (across reloads), and an expired or malformed one holds nothing.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;
using testing::PodShape;

std::string reservation(const std::string& gpus, int count, const std::string& expires) {
  return json{{"plan", "p"},
              {"step", 1},
              {"for", {{"kind", "ReplicaSet"}, {"namespace", "ml"}, {"name", "w"}, {"uid", "uid-w"}}},
              {"gpus", gpus},
              {"gpuCount", count},
              {"gpuMilli", 1000},
              {"cpuMilli", 1000},
              {"memoryMiB", 1024},
              {"expires", expires}}
      .dump();
}

// Node a: GPUs 0-5 used, GPU 6 reserved for ReplicaSet w, GPU 7 free.
// Node b: GPUs 0-6 used, GPU 7 free.
struct Cluster {
  std::vector<json> nodes, pods;
  explicit Cluster(const std::string& annotation_value) {
    nodes.push_back(node_json({.name = "a", .annotations = {{"reservation.gpupack.io/p.1", annotation_value}}}));
    nodes.push_back(node_json({.name = "b"}));
    for (int g = 0; g < 6; ++g)
      pods.push_back(
          pod_json({.name = fmt::format("a-{}", g), .gpus = 1, .node = "a", .assigned = fmt::format("a:{}", g)}));
    for (int g = 0; g < 7; ++g)
      pods.push_back(
          pod_json({.name = fmt::format("b-{}", g), .gpus = 1, .node = "b", .assigned = fmt::format("b:{}", g)}));
  }
  void add(const json& pod) { pods.push_back(pod); }
  void load(ExtenderService& s) const {
    std::vector<K8sNode> n;
    for (const json& x : nodes) n.push_back(parse_node(x));
    std::vector<K8sPod> p;
    for (const json& x : pods) p.push_back(parse_pod(x));
    s.set_cluster(n, p, pods);
  }
};

ExtenderFilterResult filter(ExtenderService& s, const json& pod) {
  ExtenderArgs args;
  args.pod = pod;
  args.node_names = std::vector<std::string>{"a", "b"};
  return s.filter(args);
}

std::vector<std::string> passed(const ExtenderFilterResult& r) {
  return r.node_names.value_or(std::vector<std::string>{});
}

const char* kFuture = "2200-01-01T00:00:00Z";

TEST(ExtenderReservation, OthersCannotTakeTheReservedGpus) {
  Cluster c(reservation("a:6", 1, kFuture));
  const json two = pod_json({.name = "two", .gpus = 2, .owner = "other"});
  c.add(two);
  ExtenderService s("bestfit");
  c.load(s);
  // a has GPUs 6 and 7 free, but 6 is reserved: a 2-GPU pod fits nowhere.
  EXPECT_TRUE(passed(filter(s, two)).empty());
  // Expired, it holds nothing.
  Cluster old(reservation("a:6", 1, "2000-01-01T00:00:00Z"));
  old.add(two);
  ExtenderService s2("bestfit");
  old.load(s2);
  EXPECT_EQ(passed(filter(s2, two)), std::vector<std::string>{"a"});
  // Malformed, likewise (and said in the log, not fatal).
  Cluster bad("{\"for\": 3}");
  bad.add(two);
  ExtenderService s3("bestfit");
  bad.load(s3);
  EXPECT_EQ(passed(filter(s3, two)), std::vector<std::string>{"a"});
}

TEST(ExtenderReservation, ThePodItIsForGoesThereAndConsumesIt) {
  Cluster c(reservation("a:6", 1, kFuture));
  const json mine = pod_json({.name = "w-new", .gpus = 1, .owner = "w"});
  const json other = pod_json({.name = "x", .gpus = 1, .owner = "other"});
  c.add(mine);
  c.add(other);
  ExtenderService s("bestfit");
  c.load(s);
  // Steered to a, though b has a free GPU too; b says why it failed.
  const ExtenderFilterResult r = filter(s, mine);
  EXPECT_EQ(passed(r), std::vector<std::string>{"a"});
  ASSERT_TRUE(r.failed_nodes.count("b"));
  EXPECT_NE(r.failed_nodes.at("b").find("reserved for this pod on node a"), std::string::npos);
  ASSERT_EQ(s.bind(ExtenderBindingArgs{"w-new", "ml", "uid-w-new", "a"}).error, "");
  // Consumed: the other pod now gets a's last GPU, also after a reload
  // that still shows the annotation (the executor removes it later).
  EXPECT_EQ(passed(filter(s, other)), (std::vector<std::string>{"a", "b"}));
  json bound = mine;
  bound["spec"]["nodeName"] = "a";
  bound["status"]["phase"] = "Running";
  bound["metadata"]["annotations"]["gpupack.io/assigned-gpus"] = s.assignments().at("ml/w-new");
  c.pods[c.pods.size() - 2] = bound;
  c.load(s);
  EXPECT_EQ(passed(filter(s, other)), (std::vector<std::string>{"a", "b"}));
  // The placeholder is not a pod anyone sees.
  for (const auto& [key, node] : s.placements()) EXPECT_EQ(key.find("gpupack-reservation"), std::string::npos) << key;
}

// A swap's parked pod (or an admission whose moves have not run): its
// reserved GPUs are still in use. Its replacement waits for them, held off
// every node (b's free GPU included), and goes there once they are free.
TEST(ExtenderReservation, APodWhoseReservedGpusAreInUseWaitsForThem) {
  Cluster c(reservation("a:5", 1, kFuture));  // a-5 runs on GPU 5
  const json mine = pod_json({.name = "w-new", .gpus = 1, .owner = "w"});
  c.add(mine);
  ExtenderService s("bestfit");
  c.load(s);
  const ExtenderFilterResult r = filter(s, mine);
  EXPECT_TRUE(passed(r).empty());
  ASSERT_TRUE(r.failed_nodes.count("b"));
  EXPECT_NE(r.failed_nodes.at("b").find("waiting for the GPUs reserved for this pod on node a"), std::string::npos)
      << r.failed_nodes.at("b");
  // Without the reservation it would have gone anywhere.
  Cluster free_c("{}");
  free_c.nodes[0]["metadata"]["annotations"].erase("reservation.gpupack.io/p.1");
  free_c.add(mine);
  ExtenderService s2("bestfit");
  free_c.load(s2);
  EXPECT_FALSE(passed(filter(s2, mine)).empty());
  // a-5 gone: the pod is steered onto a.
  c.pods.erase(c.pods.begin() + 5);
  c.load(s);
  EXPECT_EQ(passed(filter(s, mine)), std::vector<std::string>{"a"});
}

// An admit step reserves GPUs that pods still use until the plan's moves
// free them: held from then on, never counted as a conflict before.
TEST(ExtenderReservation, GpusStillInUseAreHeldOnceFreedNotConflicts) {
  Cluster c(reservation("a:5", 1, kFuture));  // a-5 runs on GPU 5
  const json two = pod_json({.name = "two", .gpus = 2, .owner = "other"});
  c.add(two);
  ExtenderService s("bestfit");
  c.load(s);
  EXPECT_EQ(s.metrics().charge_conflicts, 0U);
  EXPECT_TRUE(s.unattributed().empty());
  // a-5 moved away: GPU 5 is held for w, so a has only GPUs 6 and 7 free...
  c.pods.erase(c.pods.begin() + 5);
  c.load(s);
  EXPECT_EQ(s.metrics().charge_conflicts, 0U);
  // for the 2-GPU pod, and none more for a 3-GPU one.
  EXPECT_EQ(passed(filter(s, two)), std::vector<std::string>{"a"});
  const json three = pod_json({.name = "three", .gpus = 3, .owner = "other"});
  c.add(three);
  c.load(s);
  EXPECT_TRUE(passed(filter(s, three)).empty()) << "the reserved GPU 5 was taken";
}

// A reservation stops holding GPUs at its expiry (tick), without a reload.
TEST(ExtenderReservation, ExpiresOnTheTickWithoutAReload) {
  const auto soon =
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + std::chrono::seconds(2);
  Cluster c(reservation("a:6", 1, fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", soon)));
  const json two = pod_json({.name = "two", .gpus = 2, .owner = "other"});
  c.add(two);
  ExtenderService s("bestfit");
  c.load(s);
  s.tick();
  EXPECT_TRUE(passed(filter(s, two)).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  s.tick();
  EXPECT_EQ(passed(filter(s, two)), std::vector<std::string>{"a"});
}

TEST(ExtenderReservation, ReadsTheExecutorsAnnotation) {
  const K8sNode n = parse_node(
      node_json({.name = "a", .annotations = {{"reservation.gpupack.io/p.1", reservation("a:6", 1, kFuture)}}}));
  std::vector<std::string> errors;
  const std::vector<GpuReservation> r = node_reservations(n, &errors);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(r[0].gpus.gpu_mask, 1u << 6);
  EXPECT_EQ(r[0].expires_unix_s, 7258118400);
  K8sPod p = parse_pod(pod_json({.name = "w-new", .gpus = 1, .owner = "w"}));
  EXPECT_TRUE(r[0].for_pod(p));
  p.namespace_name = "other";
  EXPECT_FALSE(r[0].for_pod(p));
  // GPUs on another node, or a count that differs, are refused with the key.
  const K8sNode wrong =
      parse_node(node_json({.name = "a",
                            .annotations = {{"reservation.gpupack.io/p.2", reservation("b:6", 1, kFuture)},
                                            {"reservation.gpupack.io/p.3", reservation("a:6", 2, kFuture)}}}));
  EXPECT_TRUE(node_reservations(wrong, &errors).empty());
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_NE(errors[0].find("reservation.gpupack.io/p.2"), std::string::npos);
}

}  // namespace
}  // namespace gpupack
