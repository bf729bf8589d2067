// Test support: locating the read-only shared/ folder (openb trace,
// references). Tests that need it call GPUPACK_REQUIRE_SHARED(path), which
// skips the test, naming the missing path, when the folder is absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace gpupack::testing {

inline std::string shared_path(const std::string& rel) { return std::string(GPUPACK_SHARED_DIR) + "/" + rel; }

}  // namespace gpupack::testing

#define GPUPACK_REQUIRE_SHARED(rel)                                                      \
  do {                                                                                   \
    if (!std::filesystem::exists(::gpupack::testing::shared_path(rel)))                  \
      GTEST_SKIP() << "shared data not found: " << ::gpupack::testing::shared_path(rel); \
  } while (0)
