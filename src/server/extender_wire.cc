#include "server/extender_wire.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "util/strings.h"

namespace gpupack {
namespace {

using nlohmann::json;

struct Fail {
  std::string field;
  std::string message;
};

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string_view type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

[[noreturn]] void wrong_type(const std::string& field, std::string_view want, const json& got) {
  throw Fail{field, fmt::format("expected {}, got {} ({})", want, type_name(got), brief(got))};
}

// Nesting depth of JSON text, counted outside strings, stopping early once
// over the limit. Keeps hostile bodies away from recursive code.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

json parse_body(std::string_view body) {
  if (!nesting_within(body, kMaxJsonDepth)) {
    throw Fail{"", fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth)};
  }
  try {
    return json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    throw Fail{"", fmt::format("malformed JSON: {}", e.what())};
  }
}

// Exact key first, then a case-insensitive match (Go's decoder does both).
// nullptr when absent; a JSON null is returned as a null value.
const json* find_key(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it != obj.end()) return &*it;
  for (auto i = obj.begin(); i != obj.end(); ++i) {
    if (iequals(i.key(), key)) return &*i;
  }
  return nullptr;
}

const json& require_object(const json& j, const std::string& field) {
  if (!j.is_object()) wrong_type(field.empty() ? "body" : field, "an object", j);
  return j;
}

std::string string_field(const json& obj, std::string_view key, const std::string& path, bool required) {
  std::string field = join(path, key);
  const json* v = find_key(obj, key);
  if (v == nullptr || v->is_null()) {
    if (required) throw Fail{field, "missing"};
    return {};
  }
  if (!v->is_string()) wrong_type(field, "a string", *v);
  return v->get<std::string>();
}

int64_t int64_value(const json& v, const std::string& field) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw Fail{field, fmt::format("{} is out of int64 range", u)};
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) throw Fail{field, fmt::format("expected an integer, got {}", brief(v))};
  wrong_type(field, "an integer", v);
}

int64_t int64_field(const json& obj, std::string_view key, const std::string& path) {
  const json* v = find_key(obj, key);
  if (v == nullptr || v->is_null()) return 0;  // Go leaves the zero value
  return int64_value(*v, join(path, key));
}

std::vector<std::string> string_array(const json& v, const std::string& field) {
  if (!v.is_array()) wrong_type(field, "an array of strings", v);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) wrong_type(fmt::format("{}[{}]", field, i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> string_map_field(const json& obj, std::string_view key, const std::string& path) {
  std::map<std::string, std::string> out;
  std::string field = join(path, key);
  const json* v = find_key(obj, key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_object()) wrong_type(field, "an object of strings", *v);
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it->is_string()) wrong_type(fmt::format("{}[\"{}\"]", field, it.key()), "a string", *it);
    out.emplace(it.key(), it->get<std::string>());
  }
  return out;
}

// A Kubernetes object: an object whose metadata.name is a non-empty string.
void check_object_with_name(const json& v, const std::string& field) {
  if (!v.is_object()) wrong_type(field, "an object", v);
  const json* meta = find_key(v, "metadata");
  if (meta == nullptr || meta->is_null()) throw Fail{join(field, "metadata"), "missing"};
  if (!meta->is_object()) wrong_type(join(field, "metadata"), "an object", *meta);
  if (string_field(*meta, "name", join(field, "metadata"), true).empty()) {
    throw Fail{join(field, "metadata.name"), "empty"};
  }
}

json pod_field(const json& obj, std::string_view key, const std::string& path) {
  const json* v = find_key(obj, key);
  std::string field = join(path, key);
  if (v == nullptr || v->is_null()) throw Fail{field, "missing"};
  check_object_with_name(*v, field);
  return *v;
}

// v1.NodeList: {"metadata":{},"items":[...]}; null -> nullopt.
std::optional<std::vector<json>> node_list_field(const json& obj, std::string_view key, const std::string& path) {
  const json* v = find_key(obj, key);
  std::string field = join(path, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_object()) wrong_type(field, "a NodeList object", *v);
  std::vector<json> items;
  const json* arr = find_key(*v, "items");
  if (arr == nullptr || arr->is_null()) return items;
  std::string items_field = join(field, "items");
  if (!arr->is_array()) wrong_type(items_field, "an array", *arr);
  items.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    check_object_with_name((*arr)[i], fmt::format("{}[{}]", items_field, i));
    items.push_back((*arr)[i]);
  }
  return items;
}

std::optional<std::vector<std::string>> names_field(const json& obj, std::string_view key, const std::string& path) {
  const json* v = find_key(obj, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return string_array(*v, join(path, key));
}

// Only for values that passed check_object_with_name().
std::string node_name_of(const json& node) { return find_key(*find_key(node, "metadata"), "name")->get<std::string>(); }

MetaVictims meta_victims_value(const json& v, const std::string& field) {
  if (!v.is_object()) wrong_type(field, "a MetaVictims object", v);
  MetaVictims out;
  const json* pods = find_key(v, "Pods");
  if (pods != nullptr && !pods->is_null()) {
    std::string pf = join(field, "Pods");
    if (!pods->is_array()) wrong_type(pf, "an array", *pods);
    for (size_t i = 0; i < pods->size(); ++i) {
      std::string item = fmt::format("{}[{}]", pf, i);
      if (!(*pods)[i].is_object()) wrong_type(item, "a MetaPod object", (*pods)[i]);
      out.pod_uids.push_back(string_field((*pods)[i], "UID", item, true));
    }
  }
  out.num_pdb_violations = int64_field(v, "NumPDBViolations", field);
  return out;
}

Victims victims_value(const json& v, const std::string& field) {
  if (!v.is_object()) wrong_type(field, "a Victims object", v);
  Victims out;
  const json* pods = find_key(v, "Pods");
  if (pods != nullptr && !pods->is_null()) {
    std::string pf = join(field, "Pods");
    if (!pods->is_array()) wrong_type(pf, "an array", *pods);
    for (size_t i = 0; i < pods->size(); ++i) {
      check_object_with_name((*pods)[i], fmt::format("{}[{}]", pf, i));
      out.pods.push_back((*pods)[i]);
    }
  }
  out.num_pdb_violations = int64_field(v, "NumPDBViolations", field);
  return out;
}

template <class V, class F>
std::optional<std::map<std::string, V>> victim_map_field(const json& obj, std::string_view key, const std::string& path,
                                                         F value_of) {
  const json* v = find_key(obj, key);
  std::string field = join(path, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_object()) wrong_type(field, "an object keyed by node name", *v);
  std::map<std::string, V> out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    out.emplace(it.key(), value_of(*it, fmt::format("{}[\"{}\"]", field, it.key())));
  }
  return out;
}

template <class T, class F>
WireResult<T> guarded(std::string_view body, F parse) {
  try {
    json doc = parse_body(body);
    return parse(doc);
  } catch (const Fail& f) {
    return WireError{f.field, f.message};
  } catch (const std::exception& e) {
    return WireError{"", fmt::format("invalid body: {}", e.what())};
  } catch (...) {
    return WireError{"", "invalid body"};
  }
}

json node_list_json(const std::vector<json>& items) { return json{{"metadata", json::object()}, {"items", items}}; }

json names_json(const std::optional<std::vector<std::string>>& names) { return names ? json(*names) : json(nullptr); }

json meta_victims_json(const MetaVictims& m) {
  json pods = json::array();
  for (const auto& uid : m.pod_uids) pods.push_back({{"UID", uid}});
  return {{"Pods", pods}, {"NumPDBViolations", m.num_pdb_violations}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::vector<std::string> ExtenderArgs::candidate_names() const {
  if (node_names) return *node_names;
  std::vector<std::string> out;
  if (node_texts) {
    for (const auto& n : *node_texts) out.push_back(n.name);
  }
  if (nodes) {
    for (const auto& n : *nodes) out.push_back(node_name_of(n));
  }
  return out;
}

WireResult<ExtenderArgs> parse_extender_args(std::string_view body) {
  return guarded<ExtenderArgs>(body, [](const json& doc) -> WireResult<ExtenderArgs> {
    require_object(doc, "");
    ExtenderArgs a;
    a.pod = pod_field(doc, "Pod", "");
    a.nodes = node_list_field(doc, "Nodes", "");
    a.node_names = names_field(doc, "NodeNames", "");
    if (!a.nodes && !a.node_names) throw Fail{"Nodes", "neither Nodes nor NodeNames is set"};
    return a;
  });
}

WireResult<ExtenderFilterResult> parse_extender_filter_result(std::string_view body) {
  return guarded<ExtenderFilterResult>(body, [](const json& doc) -> WireResult<ExtenderFilterResult> {
    require_object(doc, "");
    ExtenderFilterResult r;
    r.nodes = node_list_field(doc, "Nodes", "");
    r.node_names = names_field(doc, "NodeNames", "");
    r.failed_nodes = string_map_field(doc, "FailedNodes", "");
    r.failed_and_unresolvable_nodes = string_map_field(doc, "FailedAndUnresolvableNodes", "");
    r.error = string_field(doc, "Error", "", false);
    return r;
  });
}

WireResult<HostPriorityList> parse_host_priority_list(std::string_view body) {
  return guarded<HostPriorityList>(body, [](const json& doc) -> WireResult<HostPriorityList> {
    HostPriorityList out;
    if (doc.is_null()) return out;
    if (!doc.is_array()) wrong_type("body", "an array of {Host, Score}", doc);
    for (size_t i = 0; i < doc.size(); ++i) {
      std::string field = fmt::format("[{}]", i);
      if (!doc[i].is_object()) wrong_type(field, "an object", doc[i]);
      HostPriority h;
      h.host = string_field(doc[i], "Host", field, true);
      h.score = int64_field(doc[i], "Score", field);
      out.push_back(std::move(h));
    }
    return out;
  });
}

WireResult<ExtenderBindingArgs> parse_extender_binding_args(std::string_view body) {
  return guarded<ExtenderBindingArgs>(body, [](const json& doc) -> WireResult<ExtenderBindingArgs> {
    require_object(doc, "");
    ExtenderBindingArgs b;
    b.pod_name = string_field(doc, "PodName", "", true);
    b.pod_namespace = string_field(doc, "PodNamespace", "", true);
    b.pod_uid = string_field(doc, "PodUID", "", false);
    b.node = string_field(doc, "Node", "", true);
    if (b.pod_name.empty()) throw Fail{"PodName", "empty"};
    if (b.node.empty()) throw Fail{"Node", "empty"};
    return b;
  });
}

WireResult<ExtenderBindingResult> parse_extender_binding_result(std::string_view body) {
  return guarded<ExtenderBindingResult>(body, [](const json& doc) -> WireResult<ExtenderBindingResult> {
    require_object(doc, "");
    return ExtenderBindingResult{string_field(doc, "Error", "", false)};
  });
}

WireResult<ExtenderPreemptionArgs> parse_extender_preemption_args(std::string_view body) {
  return guarded<ExtenderPreemptionArgs>(body, [](const json& doc) -> WireResult<ExtenderPreemptionArgs> {
    require_object(doc, "");
    ExtenderPreemptionArgs a;
    a.pod = pod_field(doc, "Pod", "");
    a.node_name_to_victims = victim_map_field<Victims>(doc, "NodeNameToVictims", "", victims_value);
    a.node_name_to_meta_victims = victim_map_field<MetaVictims>(doc, "NodeNameToMetaVictims", "", meta_victims_value);
    return a;
  });
}

WireResult<ExtenderPreemptionResult> parse_extender_preemption_result(std::string_view body) {
  return guarded<ExtenderPreemptionResult>(body, [](const json& doc) -> WireResult<ExtenderPreemptionResult> {
    require_object(doc, "");
    ExtenderPreemptionResult r;
    auto m = victim_map_field<MetaVictims>(doc, "NodeNameToMetaVictims", "", meta_victims_value);
    if (m) r.node_name_to_meta_victims = std::move(*m);
    return r;
  });
}

namespace {

std::vector<json> node_objects(const std::vector<std::string_view>& texts) {
  std::vector<json> out;
  out.reserve(texts.size());
  for (std::string_view t : texts) out.push_back(json::parse(t.begin(), t.end()));
  return out;
}

}  // namespace

std::string to_json_text(const ExtenderArgs& v) {
  json nodes(nullptr);
  if (v.nodes) nodes = node_list_json(*v.nodes);
  if (v.node_texts) {
    std::vector<std::string_view> texts;
    for (const auto& n : *v.node_texts) texts.push_back(n.json);
    nodes = node_list_json(node_objects(texts));
  }
  json j = {{"Pod", v.pod}, {"Nodes", nodes}, {"NodeNames", names_json(v.node_names)}};
  return dump(j);
}

namespace {

void append_string_map(std::string& out, const std::map<std::string, std::string>& m) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, k);
    out += ':';
    append_json_string(out, v);
  }
  out += '}';
}

}  // namespace

// Keys in the order nlohmann's sorted objects print them.
std::string to_json_text(const ExtenderFilterResult& v) {
  std::string out;
  size_t reserve = 256;
  if (v.node_texts)
    for (std::string_view t : *v.node_texts) reserve += t.size() + 1;
  if (v.node_names)
    for (const auto& n : *v.node_names) reserve += n.size() + 3;
  for (const auto& [k, m] : v.failed_nodes) reserve += k.size() + m.size() + 6;
  for (const auto& [k, m] : v.failed_and_unresolvable_nodes) reserve += k.size() + m.size() + 6;
  out.reserve(reserve);
  out += "{\"Error\":";
  append_json_string(out, v.error);
  out += ",\"FailedAndUnresolvableNodes\":";
  append_string_map(out, v.failed_and_unresolvable_nodes);
  out += ",\"FailedNodes\":";
  append_string_map(out, v.failed_nodes);
  out += ",\"NodeNames\":";
  if (v.node_names) {
    out += '[';
    for (size_t i = 0; i < v.node_names->size(); ++i) {
      if (i) out += ',';
      append_json_string(out, (*v.node_names)[i]);
    }
    out += ']';
  } else {
    out += "null";
  }
  out += ",\"Nodes\":";
  if (v.node_texts) {
    out += "{\"items\":[";
    for (size_t i = 0; i < v.node_texts->size(); ++i) {
      if (i) out += ',';
      out += (*v.node_texts)[i];
    }
    out += "],\"metadata\":{}}";
  } else if (v.nodes) {
    out += dump(node_list_json(*v.nodes));
  } else {
    out += "null";
  }
  out += '}';
  return out;
}

std::string to_json_text(const HostPriorityList& v) {
  std::string out;
  size_t reserve = 2;
  for (const auto& h : v) reserve += h.host.size() + 32;
  out.reserve(reserve);
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += "{\"Host\":";
    append_json_string(out, v[i].host);
    out += ",\"Score\":";
    out += std::to_string(v[i].score);
    out += '}';
  }
  out += ']';
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  const size_t start = out.size();
  out += '"';
  size_t plain = 0;  // start of the pending run of bytes copied as they are
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) continue;
    if (c >= 0x80) {
      // Multi-byte UTF-8 (rare in names): nlohmann writes the whole string,
      // replacing invalid sequences.
      out.resize(start);
      out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
}

std::string to_json_text(const ExtenderBindingArgs& v) {
  return dump({{"PodName", v.pod_name}, {"PodNamespace", v.pod_namespace}, {"PodUID", v.pod_uid}, {"Node", v.node}});
}

std::string to_json_text(const ExtenderBindingResult& v) { return dump({{"Error", v.error}}); }

std::string to_json_text(const ExtenderPreemptionArgs& v) {
  json j = {{"Pod", v.pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", nullptr}};
  if (v.node_name_to_victims) {
    json m = json::object();
    for (const auto& [node, vic] : *v.node_name_to_victims) {
      m[node] = {{"Pods", vic.pods}, {"NumPDBViolations", vic.num_pdb_violations}};
    }
    j["NodeNameToVictims"] = m;
  }
  if (v.node_name_to_meta_victims) {
    json m = json::object();
    for (const auto& [node, mv] : *v.node_name_to_meta_victims) m[node] = meta_victims_json(mv);
    j["NodeNameToMetaVictims"] = m;
  }
  return dump(j);
}

std::string to_json_text(const ExtenderPreemptionResult& v) {
  json m = json::object();
  for (const auto& [node, mv] : v.node_name_to_meta_victims) m[node] = meta_victims_json(mv);
  return dump({{"NodeNameToMetaVictims", m}});
}

ExtenderFilterResult make_filter_result(const ExtenderArgs& args, const std::vector<std::string>& passed,
                                        std::map<std::string, std::string> failed,
                                        std::map<std::string, std::string> failed_unresolvable) {
  std::set<std::string, std::less<>> keep(passed.begin(), passed.end());
  ExtenderFilterResult r;
  if (args.node_texts) {
    std::vector<std::string_view> items;
    for (const auto& n : *args.node_texts) {
      if (keep.count(n.name) != 0) items.push_back(n.json);
    }
    r.node_texts = std::move(items);
    r.source = args.source;
  } else if (args.nodes) {
    std::vector<json> items;
    for (const auto& n : *args.nodes) {
      if (keep.count(node_name_of(n)) != 0) items.push_back(n);
    }
    r.nodes = std::move(items);
  } else {
    std::vector<std::string> names;
    for (const auto& n : args.candidate_names()) {
      if (keep.count(n) != 0) names.push_back(n);
    }
    r.node_names = std::move(names);
  }
  r.failed_nodes = std::move(failed);
  r.failed_and_unresolvable_nodes = std::move(failed_unresolvable);
  return r;
}

HostPriorityList clamp_scores(HostPriorityList list) {
  for (auto& h : list) h.score = std::clamp(h.score, kMinExtenderPriority, kMaxExtenderPriority);
  return list;
}

}  // namespace gpupack
