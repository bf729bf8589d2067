#include "analyze/defrag_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "analyze/analyze.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::node_json;
using testing::pod_json;
using testing::PodShape;

// A pod of a ReplicaSet (movable unless something else holds it).
json owned(PodShape s, const std::string& kind = "ReplicaSet") {
  s.owner = s.name + "-rs";
  s.owner_kind = kind;
  return pod_json(s);
}

json pdb(const std::string& ns, const std::string& name, json selector, int allowed) {
  json b = {{"apiVersion", "policy/v1"},
            {"kind", "PodDisruptionBudget"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"minAvailable", 1}}},
            {"status", {{"disruptionsAllowed", allowed}}}};
  if (!selector.is_null()) b["spec"]["selector"] = selector;
  return b;
}

std::vector<K8sPod> parse_pods(const std::vector<json>& objects) {
  std::vector<K8sPod> out;
  for (const json& o : objects) out.push_back(parse_pod(o));
  return out;
}

// Two 8-GPU nodes with 7 one-GPU pods each and a pending 2-GPU pod: it fits
// only after one pod moves.
struct Fragmented {
  std::vector<K8sNode> nodes{parse_node(node_json({.name = "a"})), parse_node(node_json({.name = "b"}))};
  std::vector<json> objects;
  explicit Fragmented(const std::function<json(PodShape)>& make) {
    for (const char* n : {"a", "b"})
      for (int i = 0; i < 7; ++i)
        objects.push_back(
            make({.name = std::string("w-") + n + std::to_string(i), .gpus = 1, .node = n, .labels = {{"app", "w"}}}));
    objects.push_back(owned({.name = "big", .gpus = 2}));
  }
};

TEST(DefragInput, ParsesControllerLocalVolumesPriorityAndBudgets) {
  json p = owned({.name = "x", .gpus = 1, .node = "a"}, "StatefulSet");
  p["spec"]["volumes"] = json::array(
      {{{"name", "cfg"}, {"configMap", {{"name", "c"}}}}, {{"name", "scratch"}, {"emptyDir", json::object()}}});
  p["spec"]["priorityClassName"] = "system-node-critical";
  const K8sPod k = parse_pod(p);
  EXPECT_EQ(k.controller_kind, "StatefulSet");
  EXPECT_EQ(k.controller_name, "x-rs");
  EXPECT_EQ(k.local_volumes, std::vector<std::string>{"scratch"});
  EXPECT_EQ(k.priority_class_name, "system-node-critical");

  const K8sPdb b = parse_pdb(
      pdb("ml", "b",
          {{"matchLabels", {{"app", "w"}}},
           {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"debug"}}}})}},
          2));
  EXPECT_EQ(b.disruptions_allowed, 2);
  EXPECT_TRUE(b.selects(parse_pod(pod_json({.name = "y", .labels = {{"app", "w"}}}))));
  EXPECT_FALSE(b.selects(parse_pod(pod_json({.name = "y", .labels = {{"app", "w"}, {"tier", "debug"}}}))));
  EXPECT_FALSE(b.selects(parse_pod(pod_json({.ns = "other", .name = "y", .labels = {{"app", "w"}}}))));
  // policy/v1: an empty selector selects the whole namespace, none selects nothing.
  EXPECT_TRUE(parse_pdb(pdb("ml", "all", json::object(), 1)).selects(parse_pod(pod_json({.name = "z"}))));
  EXPECT_FALSE(parse_pdb(pdb("ml", "none", nullptr, 1)).selects(parse_pod(pod_json({.name = "z"}))));
  // Bad input names the object and the field.
  try {
    (void)parse_pdb(pdb("ml", "bad", {{"matchExpressions", json::array({{{"key", "k"}, {"operator", "Maybe"}}})}}, 1));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("PodDisruptionBudget ml/bad: spec.selector.matchExpressions[0].operator"),
              std::string::npos)
        << e.what();
  }
  json negative = pdb("ml", "neg", json::object(), 1);
  negative["status"]["disruptionsAllowed"] = -1;
  EXPECT_THROW(parse_pdb(negative), std::invalid_argument);
}

// A malformed controller reference is refused with the field named, never
// read as "no controller" (which would make the pod look bare, or its
// ReplicaSet look unowned to the executor).
TEST(DefragInput, MalformedOwnerReferencesAreNamedNotIgnored) {
  const json good = owned({.name = "x", .gpus = 1, .node = "a"});
  auto error_for = [&](const std::function<void(json&)>& edit) -> std::string {
    json p = good;
    edit(p["metadata"]["ownerReferences"]);
    try {
      (void)parse_pod(p);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(error_for([](json& o) { o[0]["controller"] = "true"; }),
              HasSubstr("metadata.ownerReferences[0].controller: expected a boolean, got \"true\""));
  EXPECT_THAT(error_for([](json& o) { o[0].erase("kind"); }),
              HasSubstr("metadata.ownerReferences[0].kind: missing or empty"));
  EXPECT_THAT(error_for([](json& o) { o[0]["name"] = ""; }),
              HasSubstr("metadata.ownerReferences[0].name: missing or empty"));
  EXPECT_THAT(error_for([](json& o) { o.push_back(o[0]); }),
              HasSubstr("metadata.ownerReferences[1]: a second controller"));
  EXPECT_THAT(error_for([](json& o) { o = json::object(); }), HasSubstr("metadata.ownerReferences: expected an array"));
  EXPECT_THAT(error_for([](json& o) { o[0] = 7; }), HasSubstr("metadata.ownerReferences[0]: expected an object"));
  // A non-controller reference beside the controller is fine.
  json two = good;
  json other = two["metadata"]["ownerReferences"][0];
  other["controller"] = false;
  other["kind"] = "Workflow";
  two["metadata"]["ownerReferences"].push_back(other);
  EXPECT_EQ(parse_pod(two).controller_kind, "ReplicaSet");

  const ControllerRef none = read_controller_ref("ReplicaSet ml/r", json::object());
  EXPECT_TRUE(none.kind.empty() && none.name.empty() && none.uid.empty());
}

TEST(DefragInput, HoldsPodsThatMustNotMoveAndSaysWhy) {
  std::vector<json> objects = {
      pod_json({.name = "bare", .gpus = 1, .node = "a"}),
      owned({.name = "ds", .gpus = 1, .node = "a"}, "DaemonSet"),
      owned({.name = "exempt", .gpus = 1, .node = "a", .labels = {{"gpupack.io/defrag", "never"}}}),
      owned({.name = "crit", .gpus = 1, .node = "a"}),
      owned({.name = "disk", .gpus = 1, .node = "a"}),
      owned({.name = "locked", .gpus = 1, .node = "a", .labels = {{"app", "locked"}}}),
      owned({.name = "twice", .gpus = 1, .node = "a", .labels = {{"app", "two"}}}),
      owned({.name = "free", .gpus = 1, .node = "a", .labels = {{"app", "ok"}}}),
      owned({.name = "mirror", .gpus = 0, .node = "a", .annotations = {{"kubernetes.io/config.mirror", "x"}}}),
  };
  objects[3]["spec"]["priorityClassName"] = "system-cluster-critical";
  objects[4]["spec"]["volumes"] = json::array({{{"name", "data"}, {"hostPath", {{"path", "/data"}}}}});
  const std::vector<K8sPdb> pdbs = {
      parse_pdb(pdb("ml", "locked", {{"matchLabels", {{"app", "locked"}}}}, 0)),
      parse_pdb(pdb("ml", "two-a", {{"matchLabels", {{"app", "two"}}}}, 1)),
      parse_pdb(pdb("ml", "two-b", {{"matchLabels", {{"app", "two"}}}}, 1)),
      parse_pdb(pdb("ml", "ok", {{"matchLabels", {{"app", "ok"}}}}, 3)),
  };
  const LiveDefragInput in = live_defrag_input({parse_node(node_json({.name = "a"}))}, parse_pods(objects), pdbs);
  const auto why = [&](const std::string& pod) {
    auto it = in.held.find("ml/" + pod);
    return it == in.held.end() ? std::string() : it->second;
  };
  EXPECT_NE(why("bare").find("no controller"), std::string::npos);
  EXPECT_NE(why("ds").find("DaemonSet"), std::string::npos);
  EXPECT_NE(why("exempt").find("gpupack.io/defrag=never"), std::string::npos);
  EXPECT_NE(why("crit").find("system-cluster-critical"), std::string::npos);
  EXPECT_NE(why("disk").find("node-local storage (volume data)"), std::string::npos);
  EXPECT_NE(why("locked").find("PodDisruptionBudget ml/locked allows no disruption"), std::string::npos);
  EXPECT_NE(why("twice").find("2 PodDisruptionBudgets"), std::string::npos);
  EXPECT_EQ(why("free"), "");
  EXPECT_EQ(in.held.size(), 7U);  // the GPU pods above; the mirror pod holds no GPU
  const Snapshot& s = in.snapshot;
  EXPECT_TRUE(s.infos[0].immovable);
  EXPECT_TRUE(s.infos[8].immovable);
  EXPECT_FALSE(s.infos[7].immovable);
  EXPECT_EQ(s.infos[7].group, "pdb:ml/ok");
  EXPECT_EQ(s.max_unavailable.at("pdb:ml/ok"), 3);
  EXPECT_EQ(s.infos[7].name, "free");
  EXPECT_EQ(s.infos[7].ns, "ml");
  EXPECT_TRUE(s.state.is_bound(PodId{7}));
  EXPECT_EQ(held_reason(parse_pod(objects[2]), {.exempt_label_key = "", .exempt_label_value = ""}), "");
}

TEST(DefragInput, AnAdmissionPlanMovesOnePodToFitThePendingOne) {
  Fragmented c([](PodShape s) { return owned(s); });
  const DefragReport r = plan_admission(c.nodes, parse_pods(c.objects), {});
  ASSERT_TRUE(r.available) << r.note;
  EXPECT_EQ(r.plan["not_admitted"].size(), 0U) << r.plan.dump(1);
  EXPECT_EQ(r.plan["moves"], 1);
  EXPECT_NE(r.text.find("admit"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("big"), std::string::npos) << r.text;
}

TEST(DefragInput, NoPlanMovesHeldPodsOrBreaksABudget) {
  // Every running pod exempt: the pending pod stays out, nothing moves.
  Fragmented exempt([](PodShape s) {
    s.labels["gpupack.io/defrag"] = "never";
    return owned(s);
  });
  DefragReport r = plan_admission(exempt.nodes, parse_pods(exempt.objects), {});
  ASSERT_TRUE(r.available);
  EXPECT_EQ(r.plan["moves"], 0);
  EXPECT_EQ(r.plan["not_admitted"].size(), 1U);
  EXPECT_NE(r.text.find("14 running GPU pods are held in place"), std::string::npos) << r.text;
  // A budget allowing no disruption over all of them: the same.
  Fragmented budgeted([](PodShape s) { return owned(s); });
  r = plan_admission(budgeted.nodes, parse_pods(budgeted.objects),
                     {parse_pdb(pdb("ml", "w", {{"matchLabels", {{"app", "w"}}}}, 0))});
  EXPECT_EQ(r.plan["moves"], 0);
  // Nothing pending: no plan, and the report says why.
  r = plan_admission(budgeted.nodes, parse_pods({owned({.name = "x", .gpus = 1, .node = "a"})}), {});
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.note.find("no pending GPU pods"), std::string::npos);
}

}  // namespace
}  // namespace gpupack
