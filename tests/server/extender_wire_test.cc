#include "server/extender_wire.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "io/kubectl.h"

namespace gpupack {
namespace {

using nlohmann::json;

std::string capture_path(const char* file) {
  return std::string(GPUPACK_SHARED_DIR) + "/reference/extender-captures/" + file;
}

bool read_text(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

class RealCaptures : public ::testing::TestWithParam<const char*> {};

TEST_P(RealCaptures, ParseAsFullNodeRequests) {
  std::string path = capture_path(GetParam());
  std::string body;
  if (!read_text(path, body)) GTEST_SKIP() << "capture not found: " << path;
  auto r = parse_extender_args(body);
  ASSERT_TRUE(r.ok()) << r.error().what();
  const ExtenderArgs& a = r.value();
  EXPECT_FALSE(a.node_names.has_value());  // nodeCacheCapable false: NodeNames is null
  ASSERT_TRUE(a.nodes.has_value());
  ASSERT_EQ(a.nodes->size(), 2u);
  auto names = a.candidate_names();
  EXPECT_EQ(names[0], "0000-pai-node-00");

  // The embedded objects are ordinary Kubernetes JSON.
  K8sPod pod = parse_pod(a.pod);
  EXPECT_EQ(pod.key(), "pai-gpu/gpu-pod-00");
  EXPECT_EQ(pod.request.cpu_milli, 4000);
  EXPECT_EQ(pod.request.memory_mib, 9 * 1024);
  EXPECT_EQ(pod.request.gpu_count, 1);
  EXPECT_EQ(pod.request.gpu_milli, 500);
  K8sNode node = parse_node((*a.nodes)[0]);
  EXPECT_EQ(node.spec.cpu_milli, 64000);
  EXPECT_EQ(node.spec.memory_mib, 250 * 1024);
  EXPECT_EQ(node.spec.gpu_count, 2);

  // Re-serialising keeps the wire shape and parses back to the same thing.
  std::string again = to_json_text(a);
  json j = json::parse(again);
  EXPECT_TRUE(j.contains("Pod"));
  EXPECT_TRUE(j["NodeNames"].is_null());
  EXPECT_TRUE(j["Nodes"]["items"].is_array());
  auto r2 = parse_extender_args(again);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.value().pod, a.pod);
  EXPECT_EQ(*r2.value().nodes, *a.nodes);

  // A filter reply in full-node mode returns Node objects, a subset of the input.
  ExtenderFilterResult f = make_filter_result(a, {names[1], "not-a-candidate"}, {{names[0], "no GPU share left"}}, {});
  json reply = json::parse(to_json_text(f));
  ASSERT_EQ(reply["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(reply["Nodes"]["items"][0], (*a.nodes)[1]);
  EXPECT_TRUE(reply["NodeNames"].is_null());
  EXPECT_EQ(reply["FailedNodes"][names[0]], "no GPU share left");
  EXPECT_EQ(reply["Error"], "");
}

INSTANTIATE_TEST_SUITE_P(ExtenderWire, RealCaptures,
                         ::testing::Values("filter-request-full-nodes.json", "prioritize-request-full-nodes.json"));

TEST(ExtenderWire, NodeCacheCapableRequestAndReply) {
  auto r = parse_extender_args(R"({"Pod":{"metadata":{"name":"p","namespace":"ml","uid":"u"},
    "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},"status":{}},
    "Nodes":null,"NodeNames":["a","b","c"]})");
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_FALSE(r.value().nodes.has_value());
  EXPECT_EQ(r.value().candidate_names(), (std::vector<std::string>{"a", "b", "c"}));
  ExtenderFilterResult f = make_filter_result(r.value(), {"c", "a"}, {{"b", "full"}}, {{"x", "wrong model"}});
  json reply = json::parse(to_json_text(f));
  EXPECT_EQ(reply["NodeNames"], json({"a", "c"}));  // request order
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"]["x"], "wrong model");
  // Exactly the Go field names.
  std::vector<std::string> keys;
  for (auto it = reply.begin(); it != reply.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"Error", "FailedAndUnresolvableNodes", "FailedNodes", "NodeNames", "Nodes"}));
  auto back = parse_extender_filter_result(to_json_text(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back.value().node_names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(back.value().failed_nodes.at("b"), "full");
}

TEST(ExtenderWire, PrioritizeBindAndPreemptShapes) {
  HostPriorityList list = clamp_scores({{"a", 3}, {"b", 42}, {"c", -1}});
  EXPECT_EQ(to_json_text(list), R"([{"Host":"a","Score":3},{"Host":"b","Score":10},{"Host":"c","Score":0}])");
  auto lp = parse_host_priority_list(R"([{"host":"a","score":7},{"Host":"b","Score":0}])");  // Go accepts either case
  ASSERT_TRUE(lp.ok()) << lp.error().what();
  EXPECT_EQ(lp.value(), (HostPriorityList{{"a", 7}, {"b", 0}}));

  auto b =
      parse_extender_binding_args(R"({"PodName":"train-0","PodNamespace":"ml","PodUID":"6f1c","Node":"gpu-node-2"})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value(), (ExtenderBindingArgs{"train-0", "ml", "6f1c", "gpu-node-2"}));
  EXPECT_EQ(json::parse(to_json_text(b.value())),
            json::parse(R"({"PodName":"train-0","PodNamespace":"ml","PodUID":"6f1c","Node":"gpu-node-2"})"));
  EXPECT_EQ(to_json_text(ExtenderBindingResult{}), R"({"Error":""})");
  EXPECT_EQ(parse_extender_binding_result(R"({"Error":"node gone"})").value().error, "node gone");

  auto p = parse_extender_preemption_args(R"({"Pod":{"metadata":{"name":"big"}},"NodeNameToVictims":null,
    "NodeNameToMetaVictims":{"gpu-node-1":{"Pods":[{"UID":"a1"},{"UID":"b2"}],"NumPDBViolations":1}}})");
  ASSERT_TRUE(p.ok()) << p.error().what();
  EXPECT_FALSE(p.value().node_name_to_victims.has_value());
  EXPECT_EQ(p.value().node_name_to_meta_victims->at("gpu-node-1"), (MetaVictims{{"a1", "b2"}, 1}));

  auto pv = parse_extender_preemption_args(R"({"Pod":{"metadata":{"name":"big"}},
    "NodeNameToVictims":{"n":{"Pods":[{"metadata":{"name":"v","uid":"u1"}}],"NumPDBViolations":0}}})");
  ASSERT_TRUE(pv.ok()) << pv.error().what();
  EXPECT_EQ(pv.value().node_name_to_victims->at("n").pods.size(), 1u);

  ExtenderPreemptionResult res{{{"gpu-node-1", MetaVictims{{"a1"}, 0}}}};
  EXPECT_EQ(to_json_text(res),
            R"({"NodeNameToMetaVictims":{"gpu-node-1":{"NumPDBViolations":0,"Pods":[{"UID":"a1"}]}}})");
  auto rr = parse_extender_preemption_result(to_json_text(res));
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr.value().node_name_to_meta_victims, res.node_name_to_meta_victims);
}

// Each hostile body must give an error naming the field (no crash, no throw).
struct Hostile {
  const char* body;
  const char* field;
  const char* message_part;
};

TEST(ExtenderWire, HostileArgsGiveNamedErrors) {
  const Hostile cases[] = {
      {"", "", "malformed JSON"},
      {"{", "", "malformed JSON"},
      {"[]", "body", "expected an object"},
      {"null", "body", "expected an object"},
      {R"({"NodeNames":["a"]})", "Pod", "missing"},
      {R"({"Pod":3,"NodeNames":["a"]})", "Pod", "expected an object, got a number"},
      {R"({"Pod":{"metadata":{"name":""}},"NodeNames":["a"]})", "Pod.metadata.name", "empty"},
      {R"({"Pod":{"metadata":{"name":7}},"NodeNames":["a"]})", "Pod.metadata.name", "expected a string"},
      {R"({"Pod":{"metadata":{"name":"p"}}})", "Nodes", "neither"},
      {R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":"a"})", "NodeNames", "expected an array"},
      {R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["a",1]})", "NodeNames[1]", "expected a string"},
      {R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[{"metadata":{}}]}})", "Nodes.items[0].metadata.name",
       "missing"},
      {R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":{}}})", "Nodes.items", "expected an array"},
      {R"({"Pod":{"metadata":{"name":"p"}},"Nodes":[]})", "Nodes", "expected a NodeList"},
  };
  for (const auto& c : cases) {
    auto r = parse_extender_args(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().field, c.field) << c.body << " -> " << r.error().what();
    EXPECT_NE(r.error().message.find(c.message_part), std::string::npos) << c.body << " -> " << r.error().what();
  }
}

TEST(ExtenderWire, HostileNumbersAndNesting) {
  auto big = parse_host_priority_list(R"([{"Host":"a","Score":18446744073709551615}])");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().field, "[0].Score");
  EXPECT_NE(big.error().message.find("out of int64 range"), std::string::npos);
  auto fl = parse_host_priority_list(R"([{"Host":"a","Score":1.5}])");
  ASSERT_FALSE(fl.ok());
  EXPECT_NE(fl.error().message.find("expected an integer"), std::string::npos);
  auto huge = parse_host_priority_list(R"([{"Host":"a","Score":1e999}])");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().what().find("malformed JSON"), std::string::npos) << huge.error().what();
  auto str = parse_host_priority_list(R"([{"Host":"a","Score":"5"}])");
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.error().field, "[0].Score");
  auto pdb = parse_extender_preemption_result(
      R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"u"}],"NumPDBViolations":-99999999999999999999}}})");
  ASSERT_FALSE(pdb.ok());

  std::string deep(100000, '[');
  auto d = parse_extender_args(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("nested deeper"), std::string::npos);
  std::string deep_obj = R"({"Pod":)" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_FALSE(parse_extender_args(deep_obj).ok());
  // Brackets inside strings do not count towards depth.
  std::string in_string = R"({"Pod":{"metadata":{"name":")" + std::string(500, '[') + R"("}},"NodeNames":[]})";
  EXPECT_TRUE(parse_extender_args(in_string).ok());

  auto bad_utf8 = parse_extender_binding_args("{\"PodName\":\"\xff\xfe\",\"PodNamespace\":\"a\",\"Node\":\"n\"}");
  EXPECT_FALSE(bad_utf8.ok());
  auto missing = parse_extender_binding_args(R"({"PodName":"p","PodNamespace":"ml"})");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "Node");
  auto victims = parse_extender_preemption_args(
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":{"n":{"Pods":[{"uid":3}]}}})");
  ASSERT_FALSE(victims.ok());
  EXPECT_EQ(victims.error().field, "NodeNameToMetaVictims[\"n\"].Pods[0].UID");
}

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

// The hand-written filter and prioritize replies parse to exactly what
// nlohmann writes for them, names needing escapes included.
TEST(ExtenderWireWriter, RepliesMatchNlohmannForm) {
  using nlohmann::json;
  const std::vector<std::string> names = {
      "plain", "q\"uote", "back\\slash", "ctl\n\t\x01\x1f", "\u00e9\u4e2d\U0001F600", std::string("bad\xff\xfeutf8"),
      ""};
  ExtenderFilterResult f;
  f.node_names = names;
  for (const auto& n : names) {
    f.failed_nodes[n + "-f"] = "why \"" + n + "\"";
    f.failed_and_unresolvable_nodes[n + "-u"] = n;
  }
  f.error = "err\r\n";
  auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  json want = {{"Nodes", nullptr},
               {"NodeNames", names},
               {"FailedNodes", f.failed_nodes},
               {"FailedAndUnresolvableNodes", f.failed_and_unresolvable_nodes},
               {"Error", f.error}};
  EXPECT_EQ(json::parse(to_json_text(f)), json::parse(dump(want)));
  EXPECT_EQ(to_json_text(f), dump(want));  // same bytes, too (sorted keys, compact)

  ExtenderFilterResult empty;
  EXPECT_EQ(to_json_text(empty), dump({{"Nodes", nullptr},
                                       {"NodeNames", nullptr},
                                       {"FailedNodes", json::object()},
                                       {"FailedAndUnresolvableNodes", json::object()},
                                       {"Error", ""}}));

  HostPriorityList h;
  json hw = json::array();
  int64_t score = 0;
  for (const auto& n : names) {
    h.push_back({n, score});
    hw.push_back({{"Host", n}, {"Score", score}});
    score = score == 0 ? 10 : -3;
  }
  EXPECT_EQ(to_json_text(h), dump(hw));
  EXPECT_EQ(to_json_text(HostPriorityList{}), "[]");
}

}  // namespace
}  // namespace gpupack
