// Nesting depth of JSON and YAML text, measured before any parser builds a
// tree (std only).
//
// Contract: nlohmann::json parses iteratively, but copying, comparing and
// dumping the tree it builds recurse once per level, and yaml-cpp's parser
// recurses per level while parsing; so every reader refuses input nested
// deeper than kMaxInputDepth before handing it to a parser. No Kubernetes
// object, snapshot, trace or configuration file comes close to that depth
// (a Pod with managedFields is about 15 levels deep).
// - find_json_depth_over() scans brackets outside JSON strings: O(n), no
//   allocation, stops at the first bracket that opens level max_depth + 1.
// - find_yaml_depth_over() does the same for YAML flow collections
//   ([...] and {...}, outside quoted scalars, comments and block scalars) and
//   for block collections that open on one line ("- - - x", "? ? x"). Deep
//   nesting by indentation needs quadratic input size and is left to
//   yaml-cpp's own depth guard.
// - check_json_depth() / check_yaml_depth() throw InputError naming the
//   source, the line and byte where the limit was passed, and the limit.
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpupack {

inline constexpr int kMaxInputDepth = 128;

struct DepthExcess {
  size_t byte = 0;  // 0-based offset of the bracket that passed the limit
  size_t line = 0;  // 1-based line of that byte
};

std::optional<DepthExcess> find_json_depth_over(std::string_view text, int max_depth = kMaxInputDepth);
std::optional<DepthExcess> find_yaml_depth_over(std::string_view text, int max_depth = kMaxInputDepth);

void check_json_depth(std::string_view text, std::string_view source, int max_depth = kMaxInputDepth);
void check_yaml_depth(std::string_view text, std::string_view source, int max_depth = kMaxInputDepth);

}  // namespace gpupack
