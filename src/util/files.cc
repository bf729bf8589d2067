#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "util/input_error.h"

namespace gpupack {
namespace {

std::atomic<std::uint64_t> g_max_input_bytes{kDefaultMaxInputBytes};
std::atomic<bool> g_max_input_bytes_set{false};

// Closes the descriptor on every path out of read_file_bounded().
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void too_large(const std::string& path, const std::string& detail, std::uint64_t max_bytes) {
  throw InputError(path + ": input is larger than the limit of " + describe_bytes(max_bytes) + " (" + detail +
                   "); raise the limit with --max-input-bytes");
}

std::string sys_error(int err) { return std::strerror(err); }

}  // namespace

std::uint64_t max_input_bytes() { return g_max_input_bytes.load(std::memory_order_relaxed); }

std::uint64_t max_yaml_input_bytes() {
  const std::uint64_t all = max_input_bytes();
  return g_max_input_bytes_set.load(std::memory_order_relaxed) ? all : std::min(all, kDefaultMaxYamlInputBytes);
}

void set_max_input_bytes(std::uint64_t max_bytes) {
  g_max_input_bytes.store(max_bytes, std::memory_order_relaxed);
  g_max_input_bytes_set.store(true, std::memory_order_relaxed);
}

std::string describe_bytes(std::uint64_t bytes) {
  std::string out = std::to_string(bytes) + " bytes";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return out;
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.3g %s)", v, kUnits[unit]);
  return out + buf;
}

std::string read_file_bounded(const std::string& path, std::uint64_t max_bytes) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw InputError(path + ": cannot open file: " + sys_error(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(path + ": cannot read file: " + sys_error(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory, not a file");
  // A regular file's size is known before reading; it is only a hint for
  // everything else (and may change while reading), so the loop below checks
  // the cap on what it actually reads.
  const bool regular = S_ISREG(st.st_mode);
  if (regular && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    too_large(path, "file size " + describe_bytes(static_cast<std::uint64_t>(st.st_size)), max_bytes);
  }
  // Read at most max_bytes + 1 bytes: one byte past the cap proves the input
  // is too large.
  const std::uint64_t limit = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  std::string out;
  std::uint64_t capacity = regular ? std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size) + 1, limit)
                                   : std::min<std::uint64_t>(64 * 1024, limit);
  capacity = std::max<std::uint64_t>(capacity, 1);
  out.resize(static_cast<size_t>(capacity));
  std::uint64_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (used >= limit) break;
      const std::uint64_t grown = std::min<std::uint64_t>(std::max<std::uint64_t>(used * 2, 64 * 1024), limit);
      out.resize(static_cast<size_t>(grown));
    }
    const ssize_t n = ::read(f.fd, out.data() + used, out.size() - static_cast<size_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path + ": cannot read file: " + sys_error(errno));
    }
    if (n == 0) break;
    used += static_cast<std::uint64_t>(n);
  }
  if (used > max_bytes) too_large(path, "stopped reading after " + std::to_string(used) + " bytes", max_bytes);
  out.resize(static_cast<size_t>(used));
  return out;
}

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write file");
  return out;
}

void close_output(std::ofstream& out, const std::string& path) {
  out.flush();
  if (!out) throw std::runtime_error(path + ": write failed");
}

void ensure_output_dir(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(flag + " " + dir + ": cannot write there: " + ec.message());
  const std::filesystem::path probe = std::filesystem::path(dir) / ".gpupack-write-check";
  {
    std::ofstream out(probe);
    if (!out) throw std::runtime_error(flag + " " + dir + ": cannot write there: cannot create a file");
  }
  std::filesystem::remove(probe, ec);
}

namespace {

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open to sync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const std::string why = rc == 0 ? "" : std::strerror(errno);
  ::close(fd);
  if (rc != 0) throw std::runtime_error(path + ": fsync: " + why);
}

}  // namespace

void sync_parent_dir(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), true);
}

void sync_file_and_dir(const std::string& path) {
  fsync_path(path, false);
  sync_parent_dir(path);
}

void write_file_atomically(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = open_output(tmp);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    close_output(out, tmp);
  }
  sync_file_and_dir(tmp);  // the content is on disk before the name points at it
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + ec.message());
  sync_parent_dir(path);
}

}  // namespace gpupack
