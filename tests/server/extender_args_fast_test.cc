#include "server/extender_args_fast.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpupack {
namespace {

using nlohmann::json;

std::string read_capture(const char* file) {
  std::ifstream in(std::string(GPUPACK_SHARED_DIR) + "/reference/extender-captures/" + file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json node(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
          {"status", {{"allocatable", {{"cpu", "96"}, {"memory", "512Gi"}, {"nvidia.com/gpu", "8"}}}}}};
}

json pod() {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"annotations", {{"gpupack.io/gpu-milli", "500"}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
}

// Both readers accept `body` and mean the same: Pod, names, node objects.
void expect_same_meaning(const std::string& body) {
  SCOPED_TRACE(body.substr(0, 200));
  auto ref = parse_extender_args(body);
  auto fast = parse_extender_args_fast(body);
  ASSERT_TRUE(ref.ok()) << ref.error().what();
  ASSERT_TRUE(fast.ok()) << fast.error().what();
  EXPECT_EQ(ref.value().pod, fast.value().pod);
  EXPECT_EQ(ref.value().candidate_names(), fast.value().candidate_names());
  EXPECT_EQ(ref.value().node_names, fast.value().node_names);
  EXPECT_EQ(ref.value().nodes.has_value(), fast.value().node_texts.has_value());
  EXPECT_FALSE(fast.value().nodes.has_value());
  if (ref.value().nodes && fast.value().node_texts) {
    ASSERT_EQ(ref.value().nodes->size(), fast.value().node_texts->size());
    for (size_t i = 0; i < ref.value().nodes->size(); ++i) {
      const std::string_view text = (*fast.value().node_texts)[i].json;
      EXPECT_EQ((*ref.value().nodes)[i], json::parse(text.begin(), text.end())) << i;
    }
  }
  // The request written back out is the same JSON.
  EXPECT_EQ(json::parse(to_json_text(ref.value())), json::parse(to_json_text(fast.value())));
  // The quick walk (taken for well-formed bodies) and the thorough one give
  // the very same result, node text byte for byte.
  auto thorough = parse_extender_args_thorough(body);
  ASSERT_TRUE(thorough.ok()) << thorough.error().what();
  EXPECT_EQ(thorough.value().pod, fast.value().pod);
  EXPECT_EQ(thorough.value().node_names, fast.value().node_names);
  ASSERT_EQ(thorough.value().node_texts.has_value(), fast.value().node_texts.has_value());
  if (thorough.value().node_texts) {
    ASSERT_EQ(thorough.value().node_texts->size(), fast.value().node_texts->size());
    for (size_t i = 0; i < fast.value().node_texts->size(); ++i) {
      EXPECT_EQ((*thorough.value().node_texts)[i].name, (*fast.value().node_texts)[i].name) << i;
      EXPECT_EQ((*thorough.value().node_texts)[i].json, (*fast.value().node_texts)[i].json) << i;
    }
  }
}

TEST(ExtenderArgsFast, RecordedCapturesMeanTheSame) {
  for (const char* file : {"filter-request-full-nodes.json", "prioritize-request-full-nodes.json"}) {
    const std::string body = read_capture(file);
    ASSERT_FALSE(body.empty()) << file;
    expect_same_meaning(body);
  }
}

TEST(ExtenderArgsFast, GeneratedBodiesMeanTheSame) {
  std::vector<json> nodes;
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) {
    names.push_back("node-" + std::to_string(i));
    nodes.push_back(node(names.back()));
  }
  nodes.push_back(node("we\"ird\\name\n\u00e9\u4e2d"));
  names.push_back("we\"ird\\name\n\u00e9\u4e2d");
  expect_same_meaning(
      json{{"Pod", pod()}, {"Nodes", {{"metadata", json::object()}, {"items", nodes}}}, {"NodeNames", nullptr}}.dump());
  expect_same_meaning(json{{"Pod", pod()}, {"Nodes", nullptr}, {"NodeNames", names}}.dump());
  expect_same_meaning(json{{"Pod", pod()}, {"NodeNames", names}}.dump(2));  // pretty-printed
  expect_same_meaning(json{{"Pod", pod()}, {"Nodes", {{"items", nullptr}}}}.dump());
  expect_same_meaning(json{{"Pod", pod()}, {"Nodes", {{"items", json::array()}}}}.dump());
  // Keys differing only in case, exact keys preferred, last duplicate wins.
  expect_same_meaning(R"({"pod":{"metadata":{"name":"a"}},"nodenames":["x"],"NODES":null})");
  expect_same_meaning(R"({"POD":{"metadata":{"name":"a"}},"pod":{"metadata":{"name":"b"}},"NodeNames":["x"]})");
  expect_same_meaning(R"({"pod":{"metadata":{"name":"a"}},"Pod":{"metadata":{"name":"b"}},"NodeNames":["x"]})");
  expect_same_meaning(R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"NodeNames":["y","z"]})");
  expect_same_meaning(
      R"({"Pod":{"Metadata":{"NAME":"a"}},"Nodes":{"Items":[{"METADATA":{"Name":"n1"},"x":[1,2.5e3,true,null]}]}})");
  // Numbers beyond int64 are fine where nothing reads them.
  expect_same_meaning(R"({"Pod":{"metadata":{"name":"a"},"x":123456789012345678901234567890},"NodeNames":[]})");
}

// Hostile bodies: both readers reject; the fast one names the same field
// for protocol errors and gives a message.
TEST(ExtenderArgsFast, HostileBodiesAreRejectedCleanly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"{", ""},
      {"[]", "body"},
      {"42", "body"},
      {R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"]} trailing)", ""},
      {R"({"NodeNames":["x"]})", "Pod"},
      {R"({"Pod":null,"NodeNames":["x"]})", "Pod"},
      {R"({"Pod":"x","NodeNames":["x"]})", "Pod"},
      {R"({"Pod":{"metadata":{}},"NodeNames":["x"]})", "Pod.metadata.name"},
      {R"({"Pod":{"metadata":{"name":""}},"NodeNames":["x"]})", "Pod.metadata.name"},
      {R"({"Pod":{"metadata":{"name":5}},"NodeNames":["x"]})", "Pod.metadata.name"},
      {R"({"Pod":{"metadata":{"name":"a"}}})", "Nodes"},
      {R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":"x"})", "NodeNames"},
      {R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x",7]})", "NodeNames[1]"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":[]})", "Nodes"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":{}}})", "Nodes.items"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":"n"}},3]}})", "Nodes.items[1]"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"spec":{}}]}})", "Nodes.items[0].metadata"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":[]}]}})", "Nodes.items[0].metadata"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":null}}]}})",
       "Nodes.items[0].metadata.name"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":""}}]}})",
       "Nodes.items[0].metadata.name"},
      // Malformed content anywhere, even where nothing reads it.
      {R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"other":[1 2]})", "?"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":"n"},"x":tru}]}})", "?"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":"n"},"x":1e999}]}})", "?"},
      {R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":"n"},"x":"\q"}]}})", "?"},
      {R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"y":01})", "?"},
      {std::string(R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x)") + "\xff\xfe" + R"("]})", "?"},
      {std::string(R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"d":)") + std::string(200, '[') +
           std::string(200, ']') + "}",
       ""},
      {std::string(R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"d":)") + std::string(100000, '['), "?"},
  };
  for (const auto& [body, field] : cases) {
    SCOPED_TRACE(body.substr(0, 120));
    auto ref = parse_extender_args(body);
    auto fast = parse_extender_args_fast(body);
    EXPECT_FALSE(ref.ok());
    ASSERT_FALSE(fast.ok());
    EXPECT_FALSE(fast.error().message.empty());
    if (field != "?") {
      EXPECT_EQ(fast.error().field, field) << fast.error().what();
      EXPECT_EQ(ref.error().field, field) << ref.error().what();
    }
  }
}

// Nesting right at the limit is read; one level more is refused, by both
// readers (the quick path's validator has its own depth limit, which must
// agree).
TEST(ExtenderArgsFast, DepthLimitIsTheReferences) {
  const auto body = [](int extra) {
    // The root object is level 1; the value of "d" adds `extra` arrays.
    return std::string(R"({"Pod":{"metadata":{"name":"a"}},"NodeNames":["x"],"d":)") + std::string(extra, '[') +
           std::string(extra, ']') + "}";
  };
  expect_same_meaning(body(kMaxJsonDepth - 1));
  auto ref = parse_extender_args(body(kMaxJsonDepth));
  auto fast = parse_extender_args_fast(body(kMaxJsonDepth));
  EXPECT_FALSE(ref.ok());
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().message.find("nested deeper"), std::string::npos) << fast.error().what();
}

// Text between items (whitespace, newlines) is not part of a node's text.
TEST(ExtenderArgsFast, NodeTextIsExactlyTheObject) {
  const std::string body =
      "{ \"Pod\" : {\"metadata\":{\"name\":\"a\"}} ,\n \"Nodes\" : { \"items\" : [ \n"
      "  {\"metadata\" : {\"name\":\"n1\"}, \"x\": [1, 2.5, \"s\\u00e9\"]}  ,\t{\"metadata\":{\"name\":\"n2\"}}\n ] } "
      "}";
  expect_same_meaning(body);
  auto fast = parse_extender_args_fast(body);
  ASSERT_TRUE(fast.ok()) << fast.error().what();
  ASSERT_EQ(fast.value().node_texts->size(), 2u);
  EXPECT_EQ((*fast.value().node_texts)[0].json, R"({"metadata" : {"name":"n1"}, "x": [1, 2.5, "s\u00e9"]})");
  EXPECT_EQ((*fast.value().node_texts)[1].json, R"({"metadata":{"name":"n2"}})");
}

// Malformed JSON is reported where it was found.
TEST(ExtenderArgsFast, MalformedJsonNamesThePath) {
  auto r = parse_extender_args_fast(
      R"({"Pod":{"metadata":{"name":"a"}},"Nodes":{"items":[{"metadata":{"name":"n"}},{"metadata":{"name":"m"},"status":{"x":tru}}]}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "Nodes.items[1].status.x") << r.error().what();
  EXPECT_NE(r.error().message.find("malformed JSON"), std::string::npos);
}

// The filter reply spliced from node text is the same JSON as the reply
// built from node objects.
TEST(ExtenderArgsFast, SplicedFilterReplyEqualsObjectReply) {
  std::vector<json> nodes;
  for (const char* n : {"a", "b\"q", "c\\d", "\u00e9t\u00e9"}) nodes.push_back(node(n));
  const std::string body = json{{"Pod", pod()}, {"Nodes", {{"metadata", json::object()}, {"items", nodes}}}}.dump(1);
  auto ref = parse_extender_args(body);
  auto fast = parse_extender_args_fast(body);
  ASSERT_TRUE(ref.ok() && fast.ok());
  const std::vector<std::string> passed = {"c\\d", "a", "\u00e9t\u00e9"};
  std::map<std::string, std::string> failed = {{"b\"q", "gpu_milli: \"no\"\ttab\x01"}};
  auto r1 = make_filter_result(ref.value(), passed, failed, {{"x", "y"}});
  auto r2 = make_filter_result(fast.value(), passed, failed, {{"x", "y"}});
  ASSERT_TRUE(r2.node_texts.has_value());
  EXPECT_EQ(r2.node_texts->size(), 3u);
  const json j1 = json::parse(to_json_text(r1));
  EXPECT_EQ(j1, json::parse(to_json_text(r2)));
  EXPECT_EQ(j1["Nodes"]["items"][0]["metadata"]["name"], "a");  // request order
  EXPECT_TRUE(parse_extender_filter_result(to_json_text(r2)).ok());
}

// The body as kube-scheduler's Go client writes it: the Pod first, then the
// node list, then NodeNames.
std::string go_body(const json& pod_object, const std::vector<std::string>& item_texts, bool names_null = true) {
  std::string items;
  for (const std::string& t : item_texts) items += (items.empty() ? "" : ",") + t;
  return R"({"Pod":)" + pod_object.dump() + R"(,"Nodes":{"metadata":{},"items":[)" + items + "]}," +
         (names_null ? R"("NodeNames":null})" : R"("NodeNames":[]})");
}

json pod_named(const std::string& name) {
  json p = pod();
  p["metadata"]["name"] = name;
  return p;
}

// Both readers reject `body`, naming the same field.
void expect_same_rejection(const std::string& body) {
  SCOPED_TRACE(body.substr(0, 200));
  auto fast = parse_extender_args_fast(body);
  auto thorough = parse_extender_args_thorough(body);
  ASSERT_FALSE(thorough.ok());
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(fast.error().field, thorough.error().field);
  EXPECT_EQ(fast.error().message, thorough.error().message);
  EXPECT_FALSE(parse_extender_args(body).ok());
}

// The same node list call after call: the head alone is read, and what the
// tail held is the same as a whole read; a head that does not fit the tail
// (malformed, a competing key, a second Pod) is read whole and means what
// the reference says.
TEST(ExtenderArgsFast, RepeatedNodeListReadsTheHeadOnly) {
  std::vector<std::string> items;
  for (int i = 0; i < 40; ++i) items.push_back(node("rep-" + std::to_string(i)).dump());
  const std::string first = go_body(pod_named("p0"), items);
  expect_same_meaning(first);
  const ExtenderArgsReads before = extender_args_reads();
  for (int i = 1; i <= 5; ++i) expect_same_meaning(go_body(pod_named("p" + std::to_string(i)), items));
  // expect_same_meaning reads each body once with the fast reader.
  EXPECT_EQ(extender_args_reads().repeated - before.repeated, 5u);
  EXPECT_EQ(extender_args_reads().thorough, before.thorough);

  const std::string tail = first.substr(first.find(R"("Nodes")"));
  const std::string pod_text = pod_named("q").dump();
  // Heads that do not end where a field may start, or carry malformed JSON.
  for (const std::string& head : {R"({"Pod":)" + pod_text + R"(,"x":tru,)", R"({"Pod":)" + pod_text + R"(,"x":{)",
                                  R"({"Pod":)" + pod_text + R"(,"x":[)", R"({"Pod":)" + pod_text + R"(,"x":")",
                                  R"({"Pod":)" + pod_text + R"(,"x":1 2,)", R"({"Pod":)" + pod_text + R"( "x":1,)",
                                  R"({"Pod":)" + pod_text, R"({"Pod":)" + pod_text + ",,"})
    expect_same_rejection(head + tail);
  // Heads that read well: other fields, a second Pod (the last one wins), keys
  // that compete with the tail's, no Pod at all.
  expect_same_meaning(R"({"Pod":)" + pod_text + R"(,"x":[1,{"y":null}],)" + tail);
  expect_same_meaning(R"({ "Pod" : )" + pod_text + " , \n " + tail);
  expect_same_meaning(R"({"Pod":)" + pod_text + R"(,"Pod":)" + pod_named("r").dump() + "," + tail);
  expect_same_meaning(R"({"pod":)" + pod_text + R"(,"Pod":)" + pod_named("r").dump() + "," + tail);
  expect_same_meaning(R"({"Pod":)" + pod_text + R"(,"NodeNames":["rep-1"],"nodes":null,)" + tail);
  expect_same_meaning(R"({"Pod":)" + pod_text + R"(,"NODES":{"items":[]},)" + tail);
  expect_same_rejection(R"({"x":1,)" + tail);
  // A different tail is read whole, and kept for the next body.
  expect_same_meaning(go_body(pod_named("s"), items, false));
  const uint64_t repeated = extender_args_reads().repeated;
  expect_same_meaning(go_body(pod_named("t"), items, false));
  EXPECT_EQ(extender_args_reads().repeated, repeated + 1);
}

// Node items known from earlier bodies vouch only for their exact bytes:
// a changed item under a known name is read again, malformed or not.
TEST(ExtenderArgsFast, KnownItemsVouchOnlyForTheirExactText) {
  const std::string a = R"({"metadata":{"name":"memo-a"},"x":1})";
  const std::string b = R"({"metadata":{"name":"memo-b"},"x":[1,2]})";
  // Lists that differ in what follows them, so that none is a repeated tail.
  int variant = 0;
  const auto body = [&variant](const std::vector<std::string>& items) {
    ++variant;
    return go_body(pod_named("p" + std::to_string(variant)), items, variant % 2 == 0);
  };
  expect_same_meaning(body({a, b}));
  expect_same_meaning(body({b, a}));
  expect_same_rejection(body({R"({"metadata":{"name":"memo-a"},"x":tru})", b}));
  expect_same_rejection(body({a, R"({"metadata":{"name":"memo-b"},"x":[1 2]})"}));
  expect_same_rejection(body({a, R"({"metadata":{"name":"memo-b"},"x":[1,2]}})"}));
  expect_same_meaning(body({R"({"metadata":{"name":"memo-a"},"x":2})", b}));
  // The name the reference takes when keys repeat or differ in case; the
  // item is known by the first name as written.
  const std::string twice = R"({"metadata":{"name":"memo-a"},"metadata":{"name":"memo-c"}})";
  const std::string upper = R"({"Metadata":{"name":"memo-d"}})";
  const std::string upper2 = R"({"METADATA":{"NAME":"memo-e"}})";
  for (int round = 0; round < 2; ++round) {
    expect_same_meaning(body({twice, upper, upper2, a}));
    expect_same_meaning(body({upper2, twice, upper}));
  }
  expect_same_rejection(body({R"({"metadata":{"name":"memo-a"},"metadata":{"name":""}})"}));
  expect_same_rejection(body({R"({"Metadata":{"name":5}})"}));
}

}  // namespace
}  // namespace gpupack
