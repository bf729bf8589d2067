// Reading input files within a size cap; writing output files with errors
// that name the path.
//
// Contract:
// - read_file_bounded(path, max_bytes) returns the whole content of `path` or
//   throws InputError naming the path. A regular file larger than max_bytes is
//   refused from its size before anything is read; anything else (a pipe, a
//   FIFO, /dev/zero, a /proc file, a file that grows while read) is read only
//   up to max_bytes + 1 bytes and refused once it passes max_bytes, so memory
//   stays bounded by the cap. The message names the size, the cap and the
//   `--max-input-bytes` flag that raises it.
// - max_input_bytes() is the process-wide cap every file reader uses, by
//   default kDefaultMaxInputBytes (1 GiB: the largest inputs seen in practice,
//   a `kubectl get pods -A -o json` of a ~50,000-pod cluster or a PyTorch
//   memory snapshot, stay well below it, while a DOM built from a 1 GiB JSON
//   already needs several GiB of memory). set_max_input_bytes() changes it;
//   the CLI calls it once, before any reader runs. Both are thread-safe
//   (atomics), but a change does not affect reads already in progress.
// - max_yaml_input_bytes() is the cap of YAML inputs: yaml-cpp parses only a
//   few MB/s (a 300 MB line takes over a minute), and YAML inputs are
//   hand-written cluster, workload and demand files, so by default it is
//   the smaller of kDefaultMaxYamlInputBytes (64 MiB) and max_input_bytes();
//   once set_max_input_bytes() was called (the flag was given), it is
//   max_input_bytes().
// - open_output() truncates or creates `path` and throws
//   std::runtime_error("PATH: cannot write file") when it cannot;
//   close_output() flushes and throws "PATH: write failed" if any write failed.
// - ensure_output_dir(dir, flag) creates `dir` (and its parents) and checks a
//   file can be written there, before a long run that ends by writing to it;
//   throws std::runtime_error("FLAG DIR: cannot write there: why").
// - sync_file_and_dir(path) fsyncs a file and the folder that holds it (a
//   rename into place is durable after it); sync_parent_dir(path) only the
//   folder (a new file's name). Both throw std::runtime_error naming the path.
// - write_file_atomically(path, text) writes `text` to path + ".tmp", syncs
//   it, renames it over `path` and syncs the folder: a reader, or the file
//   after a crash, sees the old content or the new, never a part. Throws
//   std::runtime_error naming the path when a step fails.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace gpupack {

inline constexpr std::uint64_t kDefaultMaxInputBytes = std::uint64_t{1} << 30;       // 1 GiB
inline constexpr std::uint64_t kDefaultMaxYamlInputBytes = std::uint64_t{64} << 20;  // 64 MiB

std::uint64_t max_input_bytes();
std::uint64_t max_yaml_input_bytes();
void set_max_input_bytes(std::uint64_t max_bytes);

// "1073741824 bytes (1 GiB)", "1500 bytes (1.5 KiB)": sizes in messages.
std::string describe_bytes(std::uint64_t bytes);

std::string read_file_bounded(const std::string& path, std::uint64_t max_bytes);
inline std::string read_file_bounded(const std::string& path) { return read_file_bounded(path, max_input_bytes()); }

std::ofstream open_output(const std::string& path);
void close_output(std::ofstream& out, const std::string& path);
void ensure_output_dir(const std::string& dir, const std::string& flag);

void sync_file_and_dir(const std::string& path);
void sync_parent_dir(const std::string& path);
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace gpupack
