// kube-scheduler extender wire types (k8s.io/kube-scheduler/extender/v1) and
// their JSON form.
//
// Contract:
// - JSON keys are the Go field names, capitalised, exactly as kube-scheduler
//   sends and expects them (`Pod`, `Nodes`, `NodeNames`, `FailedNodes`,
//   `FailedAndUnresolvableNodes`, `Error`, `Host`, `Score`, `PodName`,
//   `PodNamespace`, `PodUID`, `Node`, `NodeNameToVictims`,
//   `NodeNameToMetaVictims`, `Pods`, `NumPDBViolations`, `UID`). Serialisers
//   emit exactly those keys; parsers prefer an exact key and, like Go's
//   decoder, also accept a key that differs only in case.
// - Embedded Kubernetes objects (v1.Pod, Node items of a v1.NodeList) are
//   kept as JSON values; parsers check only what the protocol relies on (an
//   object with a non-empty metadata.name). io/kubectl.h interprets them.
// - parse_* never throw and never crash on any input: malformed JSON, wrong
//   types, missing fields, numbers out of int64 range and nesting deeper than
//   kMaxJsonDepth all come back as a WireError naming the field path.
// - Stateless; all functions are thread-safe. Cost linear in the body size.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gpupack {

constexpr int64_t kMinExtenderPriority = 0;
constexpr int64_t kMaxExtenderPriority = 10;
constexpr int kMaxJsonDepth = 128;

struct WireError {
  std::string field;    // JSON path, e.g. "Nodes.items[2].metadata.name"; "" = whole body
  std::string message;  // what is wrong, with the offending value where short
  std::string what() const { return field.empty() ? message : field + ": " + message; }
};

// Either a value or a WireError (a small stand-in for std::expected).
template <class T>
class WireResult {
 public:
  WireResult(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  WireResult(WireError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const { return std::get<0>(v_); }
  T& value() { return std::get<0>(v_); }
  const WireError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, WireError> v_;
};

// A v1.Node item kept as its JSON text (see extender_args_fast.h).
struct NodeText {
  std::string name;       // metadata.name
  std::string_view json;  // the object's exact text, a view into the owner's `source`
};

// Filter and prioritize request.
struct ExtenderArgs {
  nlohmann::json pod;                                  // v1.Pod
  std::optional<std::vector<nlohmann::json>> nodes;    // v1.NodeList items (nodeCacheCapable false)
  std::optional<std::vector<std::string>> node_names;  // nodeCacheCapable true
  // The fast parser's form of `nodes` (then nullopt): items as JSON text.
  std::optional<std::vector<NodeText>> node_texts;
  std::shared_ptr<const std::string> source;  // owns the text node_texts views
  bool has_nodes() const { return nodes.has_value() || node_texts.has_value(); }
  // The candidate node names from whichever form was sent, in order.
  std::vector<std::string> candidate_names() const;
};

struct ExtenderFilterResult {
  std::optional<std::vector<nlohmann::json>> nodes;  // survivors as Node objects
  // Survivors as Node JSON text (when the request came as node_texts);
  // serialised exactly like `nodes`. Views into `source`.
  std::optional<std::vector<std::string_view>> node_texts;
  std::shared_ptr<const std::string> source;
  std::optional<std::vector<std::string>> node_names;  // survivors as names
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable_nodes;
  std::string error;
};

struct HostPriority {
  std::string host;
  int64_t score = 0;  // kMinExtenderPriority..kMaxExtenderPriority
  friend bool operator==(const HostPriority&, const HostPriority&) = default;
};
using HostPriorityList = std::vector<HostPriority>;

struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
  friend bool operator==(const ExtenderBindingArgs&, const ExtenderBindingArgs&) = default;
};

struct ExtenderBindingResult {
  std::string error;
};

struct Victims {
  std::vector<nlohmann::json> pods;  // v1.Pod objects
  int64_t num_pdb_violations = 0;
};

struct MetaVictims {
  std::vector<std::string> pod_uids;  // MetaPod.UID
  int64_t num_pdb_violations = 0;
  friend bool operator==(const MetaVictims&, const MetaVictims&) = default;
};

struct ExtenderPreemptionArgs {
  nlohmann::json pod;
  std::optional<std::map<std::string, Victims>> node_name_to_victims;           // nodeCacheCapable false
  std::optional<std::map<std::string, MetaVictims>> node_name_to_meta_victims;  // nodeCacheCapable true
};

struct ExtenderPreemptionResult {
  std::map<std::string, MetaVictims> node_name_to_meta_victims;
};

// --- parsing (never throws) ---
WireResult<ExtenderArgs> parse_extender_args(std::string_view body);
WireResult<ExtenderFilterResult> parse_extender_filter_result(std::string_view body);
WireResult<HostPriorityList> parse_host_priority_list(std::string_view body);
WireResult<ExtenderBindingArgs> parse_extender_binding_args(std::string_view body);
WireResult<ExtenderBindingResult> parse_extender_binding_result(std::string_view body);
WireResult<ExtenderPreemptionArgs> parse_extender_preemption_args(std::string_view body);
WireResult<ExtenderPreemptionResult> parse_extender_preemption_result(std::string_view body);

// --- serialising (compact JSON text) ---
// The filter and prioritize replies are written directly (no DOM); they
// parse to the same JSON as the nlohmann form (see append_json_string()).
std::string to_json_text(const ExtenderArgs& v);
std::string to_json_text(const ExtenderFilterResult& v);
std::string to_json_text(const HostPriorityList& v);
std::string to_json_text(const ExtenderBindingArgs& v);
std::string to_json_text(const ExtenderBindingResult& v);
std::string to_json_text(const ExtenderPreemptionArgs& v);
std::string to_json_text(const ExtenderPreemptionResult& v);

// A filter reply in the form the request used: Node objects (a subset of
// args.nodes, in request order) when the request carried Nodes, names
// otherwise. Names in `passed` that were not candidates are dropped, since
// kube-scheduler rejects replies naming nodes it did not send.
ExtenderFilterResult make_filter_result(const ExtenderArgs& args, const std::vector<std::string>& passed,
                                        std::map<std::string, std::string> failed,
                                        std::map<std::string, std::string> failed_unresolvable);

// Appends `s` as a JSON string literal (quotes included), escaped as
// nlohmann::json::dump does (invalid UTF-8 replaced by U+FFFD).
void append_json_string(std::string& out, std::string_view s);

// Scores mapped to 0..10 (values outside are clamped).
HostPriorityList clamp_scores(HostPriorityList list);

}  // namespace gpupack
