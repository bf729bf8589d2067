#include "util/files.h"

#include <stdexcept>

namespace gpupack {

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write file");
  return out;
}

void close_output(std::ofstream& out, const std::string& path) {
  out.flush();
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace gpupack
