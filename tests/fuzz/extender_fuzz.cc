// libFuzzer target: extender wire parsers, the Kubernetes object readers and
// the Prometheus text parser
// must never crash, never leak an exception type other than
// std::invalid_argument (object readers), and whatever parses must serialise
// and parse back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "io/dcgm.h"
#include "io/kubectl.h"
#include "server/extender_args_fast.h"
#include "server/extender_wire.h"

namespace {

template <class R, class F>
void round_trip(const R& r, F parse_again) {
  if (!r.ok()) {
    if (r.error().message.empty()) std::abort();  // errors must say something
    return;
  }
  auto again = parse_again(gpupack::to_json_text(r.value()));
  if (!again.ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  using namespace gpupack;

  auto args = parse_extender_args(body);
  round_trip(args, [](const std::string& s) { return parse_extender_args(s); });
  if (args.ok()) {
    // The embedded objects go to the Kubernetes readers next; they may reject
    // them, but only with std::invalid_argument.
    try {
      parse_pod(args.value().pod);
    } catch (const std::invalid_argument&) {
    }
    if (args.value().nodes) {
      for (const auto& n : *args.value().nodes) {
        try {
          parse_node(n);
        } catch (const std::invalid_argument&) {
        }
      }
      auto names = args.value().candidate_names();
      auto f = make_filter_result(args.value(), names, {}, {});
      if (!parse_extender_filter_result(to_json_text(f)).ok()) std::abort();
    }
  }
  // The simdjson reader: never crashes, errors say something, and what it
  // accepts the reference accepts with the same candidates; a filter reply
  // spliced from its node text parses.
  auto fast = parse_extender_args_fast(body);
  if (!fast.ok()) {
    if (fast.error().message.empty()) std::abort();
  } else {
    if (!args.ok() || args.value().candidate_names() != fast.value().candidate_names()) std::abort();
    if (args.value().pod != fast.value().pod) std::abort();
    auto names = fast.value().candidate_names();
    auto f = make_filter_result(fast.value(), names, {}, {});
    if (!parse_extender_filter_result(to_json_text(f)).ok()) std::abort();
    if (!parse_extender_args(to_json_text(fast.value())).ok()) std::abort();
    // The quick walk (well-formed bodies) agrees with the thorough one.
    auto thorough = parse_extender_args_thorough(body);
    if (!thorough.ok() || thorough.value().pod != fast.value().pod ||
        thorough.value().node_names != fast.value().node_names ||
        thorough.value().node_texts.has_value() != fast.value().node_texts.has_value())
      std::abort();
    if (fast.value().node_texts) {
      const auto& a = *fast.value().node_texts;
      const auto& b = *thorough.value().node_texts;
      if (a.size() != b.size()) std::abort();
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].json != b[i].json) std::abort();
    }
  }
  round_trip(parse_extender_filter_result(body), [](const std::string& s) { return parse_extender_filter_result(s); });
  round_trip(parse_host_priority_list(body), [](const std::string& s) { return parse_host_priority_list(s); });
  round_trip(parse_extender_binding_args(body), [](const std::string& s) { return parse_extender_binding_args(s); });
  round_trip(parse_extender_binding_result(body),
             [](const std::string& s) { return parse_extender_binding_result(s); });
  round_trip(parse_extender_preemption_args(body),
             [](const std::string& s) { return parse_extender_preemption_args(s); });
  round_trip(parse_extender_preemption_result(body),
             [](const std::string& s) { return parse_extender_preemption_result(s); });
  try {
    parse_pod_list(body, "fuzz");
  } catch (const std::invalid_argument&) {
  }
  try {
    parse_node_list(body, "fuzz");
  } catch (const std::invalid_argument&) {
  }
  // The metrics text parser shares the hostile-input contract.
  try {
    observe_dcgm(parse_prometheus_text(body, "fuzz"), "fuzz");
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
