// Test support: run the built gpupack binary (GPUPACK_BINARY) with arguments
// and capture its exit code and combined stdout/stderr; fresh temp folders;
// whole-file reads.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpupack::testing {

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

inline RunResult run_gpupack(const std::string& args) {
  const std::string cmd = std::string(GPUPACK_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

// An empty folder under the system temp directory, named gpupack_<name>.
inline std::string fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpupack_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gpupack::testing
