// Every reader bounds what it reads: depth (refused before a tree is built),
// size (--max-input-bytes) and what an error quotes (a short excerpt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "alloc/trace_io.h"
#include "defrag/snapshot.h"
#include "io/csv.h"
#include "io/dcgm.h"
#include "io/hw_input.h"
#include "io/input_error.h"
#include "io/kubectl.h"
#include "io/openb.h"
#include "support/cli_runner.h"
#include "util/nesting.h"

namespace gpupack {
namespace {

using testing::fresh_temp_dir;
using testing::run_gpupack;

constexpr int kDeep = 100000;
const std::string kDeepArray = std::string(kDeep, '[') + std::string(kDeep, ']');
// Longest message a reader may produce around one quoted value: the excerpt
// (80 bytes) plus the file, field and explanation.
constexpr size_t kMaxMessage = 600;

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BoundedInput, KubectlRefusesA100000DeepNodesFileNamingFileAndDepth) {
  const std::string dir = fresh_temp_dir("bounded_deep");
  // The deep value where an object is expected, and inside an object.
  for (const std::string& text :
       {"{\"items\":[" + kDeepArray + "]}", "{\"items\":[{\"metadata\":{\"labels\":" + kDeepArray + "}}]}"}) {
    const std::string path = write(dir, "deep.json", text);
    const std::string msg = error_of([&] { read_node_list_file(path); });
    EXPECT_NE(msg.find(path + ":1: JSON nested more than " + std::to_string(kMaxInputDepth) + " levels deep"),
              std::string::npos)
        << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u);
    EXPECT_NE(error_of([&] { read_pod_list_file(path); }).find("levels deep"), std::string::npos);
  }
  // Just within the limit, a deep value of the wrong type is reported by kind, not dumped.
  const std::string ok_depth = std::string(kMaxInputDepth - 2, '[') + std::string(kMaxInputDepth - 2, ']');
  const std::string path = write(dir, "nodes.json", "{\"items\":[" + ok_depth + "]}");
  const std::string msg = error_of([&] { read_node_list_file(path); });
  EXPECT_NE(msg.find("Node: expected an object, got an array of 1 elements"), std::string::npos) << msg;
}

TEST(BoundedInput, CliAnalyzeAndServeExitWithTheDepthErrorOnA100000DeepFile) {
  const std::string dir = fresh_temp_dir("bounded_cli_deep");
  const std::string deep = write(dir, "deep.json", "{\"items\":[" + kDeepArray + "]}");
  const std::string pods = write(dir, "pods.json", "{\"items\":[]}");
  for (const std::string& args :
       {"analyze --nodes " + deep + " --pods " + pods, "serve --listen 127.0.0.1:0 --nodes " + deep + " --pods " + pods,
        "serve --listen 127.0.0.1:0 --nodes " + pods + " --pods " + deep}) {
    const auto r = run_gpupack(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output.substr(0, 500);
    EXPECT_NE(r.output.find("gpupack: error: " + deep + ":1: JSON nested more than"), std::string::npos)
        << r.output.substr(0, 500);
    EXPECT_LT(r.output.size(), 400u);
  }
}

TEST(BoundedInput, ErrorsOnAHugeLineQuoteOnlyAnExcerpt) {
  const std::string dir = fresh_temp_dir("bounded_line");
  const std::string big(4 << 20, 'x');  // one 4 MiB token
  struct Case {
    std::string what;
    std::function<void()> read;
  };
  const std::vector<Case> cases = {
      // Not JSON: the parser's own message would repeat the whole token.
      {"kubectl bad literal", [&] { read_node_list_file(write(dir, "a.json", "{\"items\":[" + big + "]}")); }},
      {"kubectl string for object",
       [&] { read_node_list_file(write(dir, "b.json", "{\"items\":[\"" + big + "\"]}")); }},
      {"kubectl huge node name",
       [&] {
         read_node_list_file(
             write(dir, "c.json", "{\"items\":[{\"metadata\":{\"name\":\"" + big + "\"},\"status\":7}]}"));
       }},
      {"kubectl huge label key",
       [&] {
         read_node_list_file(
             write(dir, "d.json", "{\"items\":[{\"metadata\":{\"name\":\"n\",\"labels\":{\"" + big + "\":1}}}]}"));
       }},
      {"kubectl huge quantity",
       [&] {
         read_pod_list_file(write(dir, "e.json",
                                  "{\"items\":[{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{"
                                  "\"resources\":{\"requests\":{\"cpu\":\"" +
                                      big + "\"}}}]}}]}"));
       }},
      {"openb CSV field",
       [&] { read_openb_nodes(write(dir, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,1," + big + "\n")); }},
      {"CSV duplicate column", [&] { CsvTable::read(write(dir, "h.csv", big + "," + big + "\n")); }},
      {"cluster YAML", [&] { read_hw_cluster(write(dir, "c.yaml", "node_pools: [{name: " + big + ", gpus: 0}]\n")); }},
      {"workload YAML value",
       [&] { read_hw_workload(write(dir, "w.yaml", "pods:\n  - {name: a, num_gpu: " + big + "}\n")); }},
      {"DCGM text", [&] { parse_prometheus_text("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 1 2 " + big + "\n", "dcgm.txt"); }},
      {"DCGM value", [&] { parse_prometheus_text("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 1" + big + "\n", "dcgm.txt"); }},
      {"snapshot JSON", [&] { parse_snapshot("{\"format\":\"" + big + "\"}", "state.json"); }},
      {"snapshot bad JSON", [&] { parse_snapshot("{\"format\":" + big + "}", "state.json"); }},
      {"trace JSON", [&] { read_trace_json(write(dir, "t.json", "{\"events\":[{\"action\":\"" + big + "\"}]}")); }},
      {"trace CSV",
       [&] { read_trace_csv(write(dir, "t.csv", "time_us,action,id,size_bytes,stream\n1," + big + ",1,1,0\n")); }},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of(c.read);
    EXPECT_NE(msg, "(no error)") << c.what;
    EXPECT_LT(msg.size(), kMaxMessage) << c.what << ": " << msg.substr(0, 300);
    EXPECT_NE(msg.find("xxxxxxxxxx"), std::string::npos) << c.what << ": the excerpt is missing: " << msg;
  }
}

TEST(BoundedInput, DeepYamlAndDeepJsonInEveryReaderAreRefusedBeforeParsing) {
  const std::string dir = fresh_temp_dir("bounded_yaml");
  std::string dashes = "node_pools:\n  ";
  for (int i = 0; i < kDeep; ++i) dashes += "- ";
  for (const std::string& text : {"node_pools: " + kDeepArray + "\n", dashes + "x\n"}) {
    const std::string msg = error_of([&] { read_hw_cluster(write(dir, "deep.yaml", text)); });
    EXPECT_NE(msg.find("deep.yaml:"), std::string::npos) << msg.substr(0, 300);
    EXPECT_NE(msg.find("YAML nested more than " + std::to_string(kMaxInputDepth) + " levels deep"), std::string::npos)
        << msg.substr(0, 300);
  }
  // Nesting by indentation (quadratic in size, so 3000 levels) is left to yaml-cpp's guard.
  std::string indented = "node_pools:\n";
  for (int i = 0; i < 3000; ++i) indented += std::string(static_cast<size_t>(i), ' ') + "- \n";
  const std::string msg = error_of([&] { read_hw_cluster(write(dir, "indent.yaml", indented)); });
  EXPECT_NE(msg.find("indent.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("YAML nested too deeply"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] {
              parse_snapshot("{\"nodes\":" + kDeepArray + "}", "state.json");
            }).find("state.json:1: JSON nested"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { read_trace_json(write(dir, "t.json", "{\"events\":" + kDeepArray + "}")); }).find("JSON nested"),
      std::string::npos);
}

TEST(BoundedInput, CliRefusesAFileOverTheCapNamingTheFlag) {
  const std::string dir = fresh_temp_dir("bounded_cap");
  const std::string nodes = write(dir, "nodes.json", "{\"items\":[]}" + std::string(200, ' '));
  const std::string pods = write(dir, "pods.json", "{\"items\":[]}");
  // Before and after the subcommand.
  for (const std::string& args : {"--max-input-bytes 100 analyze --nodes " + nodes + " --pods " + pods,
                                  "analyze --nodes " + nodes + " --pods " + pods + " --max-input-bytes 100"}) {
    const auto r = run_gpupack(args);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(nodes + ": input is larger than the limit of 100 bytes (file size 212 bytes); raise "
                                    "the limit with --max-input-bytes"),
              std::string::npos)
        << r.output;
  }
  // Raised, the same files are read.
  const auto ok = run_gpupack("--max-input-bytes 1KiB analyze --nodes " + nodes + " --pods " + pods);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  const auto bad = run_gpupack("--max-input-bytes lots analyze --nodes " + nodes + " --pods " + pods);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--max-input-bytes: 'lots' is not a byte count"), std::string::npos) << bad.output;
}

TEST(BoundedInput, CliRefusesDevZeroAndAFifoAtTheCap) {
  const std::string dir = fresh_temp_dir("bounded_stream");
  const std::string pods = write(dir, "pods.json", "{\"items\":[]}");
  auto r = run_gpupack("--max-input-bytes 64KiB analyze --nodes /dev/zero --pods " + pods);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/dev/zero: input is larger than the limit of 65536 bytes (64 KiB) (stopped reading after "
                          "65537 bytes)"),
            std::string::npos)
      << r.output;
  // A FIFO fed by a writer that never stops (yes), as a process substitution would be.
  const std::string fifo = dir + "/nodes.fifo";
  ASSERT_EQ(std::system(("mkfifo " + fifo).c_str()), 0);
  r = run_gpupack("--max-input-bytes 64KiB analyze --nodes " + fifo + " --pods " + pods + " 2>&1 & (yes '{' > " + fifo +
                  " 2>/dev/null; true); wait $!");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fifo + ": input is larger than the limit of 65536 bytes"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpupack
