// Runs the built gpupack binary (GPUPACK_BINARY) for the probe and allocsim
// commands and checks exit codes, messages and output files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct CmdResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

CmdResult run(const std::string& args) {
  CmdResult r;
  const std::string cmd = std::string(GPUPACK_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(ProbeCli, MissingDriverExitsWithCode3AndAClearMessage) {
  CmdResult r = run("probe --driver-lib /nonexistent/libcuda.so.1");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.output.find("gpupack probe: no CUDA driver: cannot load /nonexistent/libcuda.so.1"), std::string::npos)
      << r.output;
}

TEST(ProbeCli, RealDriverPathGivesATableOrADocumentedCode) {
  CmdResult r = run("probe");
  if (r.code == 0) {
    EXPECT_NE(r.output.find("largest_MiB"), std::string::npos) << r.output;
  } else {
    // This machine has no driver (3) or no GPU (4).
    EXPECT_TRUE(r.code == 3 || r.code == 4) << r.code << ": " << r.output;
    EXPECT_NE(r.output.find("gpupack probe: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("CUDA"), std::string::npos) << r.output;
  }
}

TEST(ProbeCli, HelpDocumentsExitCodes) {
  CmdResult r = run("probe --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("3 no CUDA driver"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 driver present but no GPU"), std::string::npos) << r.output;
}

TEST(AllocsimCli, BadConfigNamesKeyAndExitsNonZero) {
  CmdResult r = run("allocsim --generate training --steps 2 --config expandable_segments:yes");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("expandable_segments"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'yes'"), std::string::npos) << r.output;
}

TEST(AllocsimCli, BadTraceLineIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_allocsim_cli_bad";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "t.csv").string();
  std::ofstream(path) << "time_us,action,id,size_bytes,stream\n0,alloc,1,1024,0\n1,resize,1,0,0\n";
  CmdResult r = run("allocsim --trace " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find(path + ":3: field action: 'resize'"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// A trace without an allocation has nothing to compare: an error, not a
// table of zeros with a recommendation of the empty setting.
TEST(AllocsimCli, ATraceWithoutAllocationsIsAnErrorNotARecommendation) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_allocsim_cli_empty";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "t.csv").string();
  std::ofstream(path) << "time_us,action,id,size_bytes,stream\n";
  CmdResult r = run("allocsim --trace " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find(path + ": no allocation in the trace"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("recommendation"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

TEST(AllocsimCli, ComparesConfigsAndWritesSeries) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_allocsim_cli_out";
  std::filesystem::remove_all(dir);
  CmdResult r =
      run("allocsim --generate inference --seed 3 --steps 300 --config default --config expandable_segments:True "
          "--out " +
          dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("recommendation:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expandable_segments:True"), std::string::npos) << r.output;
  std::ifstream series(dir / "series.csv");
  std::string header;
  std::getline(series, header);
  EXPECT_EQ(header,
            "config_index,config,event,time_us,allocated_bytes,reserved_bytes,fragmentation,"
            "largest_free_block_bytes,device_allocs,ooms");
  EXPECT_TRUE(std::filesystem::exists(dir / "summary.json"));
  // The chart: one reserved (solid) and one allocated (dashed) line per
  // configuration, a legend entry each.
  std::ifstream chart(dir / "memory.svg");
  const std::string svg((std::istreambuf_iterator<char>(chart)), std::istreambuf_iterator<char>());
  size_t lines = 0, dashed = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  for (size_t p = svg.find("stroke-dasharray"); p != std::string::npos; p = svg.find("stroke-dasharray", p + 1))
    ++dashed;
  EXPECT_EQ(lines, 4u) << svg.substr(0, 400);
  EXPECT_EQ(dashed, 2u);
  EXPECT_NE(svg.find("expandable_segments:True (peak"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
