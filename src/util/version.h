// gpupack's version, one place for `gpupack --version` and the
// gpupack_build_info metric.
#pragma once

#include <string_view>

namespace gpupack {

inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace gpupack
