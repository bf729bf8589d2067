#include "util/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "util/input_error.h"

namespace gpupack {
namespace {

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpupack_files_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string error_of(const std::string& path, std::uint64_t max_bytes) {
  try {
    read_file_bounded(path, max_bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReadFileBounded, ReadsAWholeFileUpToAndAtTheCap) {
  const std::string path = temp_dir("small") + "/in.txt";
  std::string text(5000, 'a');
  text[17] = '\0';  // binary content comes back unchanged
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(read_file_bounded(path, 1 << 20), text);
  EXPECT_EQ(read_file_bounded(path, 5000), text);  // exactly at the cap
  std::ofstream(path, std::ios::trunc).close();
  EXPECT_EQ(read_file_bounded(path, 0), "");
}

TEST(ReadFileBounded, RefusesARegularFileOverTheCapNamingPathSizeCapAndFlag) {
  const std::string path = temp_dir("over") + "/big.json";
  std::ofstream(path) << std::string(5001, 'x');
  const std::string msg = error_of(path, 5000);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("5001 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("limit of 5000 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-input-bytes"), std::string::npos) << msg;
}

TEST(ReadFileBounded, ReadsDevZeroOnlyUpToTheCap) {
  const std::string msg = error_of("/dev/zero", 4096);
  EXPECT_NE(msg.find("/dev/zero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stopped reading after 4097 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-input-bytes"), std::string::npos) << msg;
}

// A writer on a FIFO, as `<(kubectl get ...)` gives: within the cap the whole
// stream is read, past it the reader stops at cap + 1 bytes.
TEST(ReadFileBounded, ReadsAFifoWithinTheCapAndRefusesOnePastIt) {
  const std::string path = temp_dir("fifo") + "/pipe";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto old = std::signal(SIGPIPE, SIG_IGN);  // the reader may close first
  auto feed = [&](size_t bytes) {
    return std::thread([path, bytes] {
      const int fd = ::open(path.c_str(), O_WRONLY);
      if (fd < 0) return;
      const std::string chunk(bytes, 'y');
      size_t done = 0;
      while (done < bytes) {
        const ssize_t n = ::write(fd, chunk.data() + done, bytes - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  };
  std::thread w1 = feed(3000);
  EXPECT_EQ(read_file_bounded(path, 3000), std::string(3000, 'y'));
  w1.join();
  std::thread w2 = feed(200000);  // more than a pipe buffer: the writer blocks until the reader leaves
  const std::string msg = error_of(path, 1000);
  w2.join();
  std::signal(SIGPIPE, old);
  EXPECT_NE(msg.find("stopped reading after 1001 bytes"), std::string::npos) << msg;
}

TEST(ReadFileBounded, NamesThePathOfAMissingFileOrADirectory) {
  const std::string dir = temp_dir("missing");
  std::string msg = error_of(dir + "/nope.json", 100);
  EXPECT_NE(msg.find(dir + "/nope.json: cannot open file"), std::string::npos) << msg;
  msg = error_of(dir, 100);
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
}

TEST(ReadFileBounded, ProcessCapDefaultsTo1GiBAndYamlTo64MiBUntilSet) {
  // Runs before any test sets the cap in this process only if run alone;
  // so check the relation, then set and restore.
  const std::uint64_t before = max_input_bytes();
  EXPECT_LE(max_yaml_input_bytes(), before);
  set_max_input_bytes(std::uint64_t{4} << 30);
  EXPECT_EQ(max_input_bytes(), std::uint64_t{4} << 30);
  EXPECT_EQ(max_yaml_input_bytes(), std::uint64_t{4} << 30);  // the flag raises YAML too
  set_max_input_bytes(before);
  EXPECT_EQ(kDefaultMaxInputBytes, std::uint64_t{1} << 30);
  EXPECT_EQ(kDefaultMaxYamlInputBytes, std::uint64_t{64} << 20);
}

TEST(WriteFileAtomically, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const std::string dir = temp_dir("atomic");
  const std::string path = dir + "/state.json";
  write_file_atomically(path, "first\n");
  write_file_atomically(path, "second, longer\n");
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second, longer\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(WriteFileAtomically, AFailedWriteNamesThePathAndKeepsTheOldContent) {
  const std::string dir = temp_dir("atomic_fail");
  const std::string path = dir + "/state.json";
  write_file_atomically(path, "old\n");
  std::filesystem::create_directory(path + ".tmp");  // the temporary cannot be opened as a file
  try {
    write_file_atomically(path, "new\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ".tmp"), std::string::npos) << e.what();
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old\n");
  std::filesystem::remove_all(dir);
}

TEST(DescribeBytes, ExactCountAndABinaryUnit) {
  EXPECT_EQ(describe_bytes(1000), "1000 bytes");
  EXPECT_EQ(describe_bytes(1536), "1536 bytes (1.5 KiB)");
  EXPECT_EQ(describe_bytes(std::uint64_t{1} << 30), "1073741824 bytes (1 GiB)");
}

}  // namespace
}  // namespace gpupack
