// Writing output files with errors that name the path.
//
// Contract: open_output() truncates or creates `path` and throws
// std::runtime_error("PATH: cannot write file") when it cannot;
// close_output() flushes and throws "PATH: write failed" if any write failed.
#pragma once

#include <fstream>
#include <string>

namespace gpupack {

std::ofstream open_output(const std::string& path);
void close_output(std::ofstream& out, const std::string& path);

}  // namespace gpupack
