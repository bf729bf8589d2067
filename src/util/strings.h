// Small string helpers shared by every layer (std only).
//
// Contract: pure functions, no allocation beyond their results.
// iequals() compares ASCII case-insensitively; split() keeps empty fields
// ("a,,b" -> {"a", "", "b"}; "" -> {""}).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpupack {

bool iequals(std::string_view a, std::string_view b);
std::vector<std::string> split(std::string_view text, char sep);

}  // namespace gpupack
