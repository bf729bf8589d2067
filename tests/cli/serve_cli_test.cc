// `gpupack serve` as a process: snapshot mode, bind over HTTP, kill -9,
// restart from the written-back pods, same GPU assignments; flag errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/httplib_config.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  ServeProcess(const std::vector<std::string>& args, const std::string& port_file,
               const std::string& stderr_file = "") {
    std::remove(port_file.c_str());
    pid = fork();
    if (pid == 0) {
      if (!stderr_file.empty()) {
        FILE* f = std::fopen(stderr_file.c_str(), "w");
        if (f != nullptr) dup2(fileno(f), 2);
      }
      std::vector<char*> argv;
      static std::string bin = GPUPACK_BINARY;
      argv.push_back(bin.data());
      std::vector<std::string> copy = args;
      for (std::string& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    for (int i = 0; i < 200 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::string t = slurp(port_file);
      if (!t.empty() && t.back() == '\n') port = std::stoi(t);
    }
  }
  void kill9() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~ServeProcess() { kill9(); }
};

std::string allocation_lines(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/metrics");
  if (!r) return "";
  std::istringstream in(r->body);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("gpupack_gpu_allocated_", 0) == 0) out += line + "\n";
  return out;
}

TEST(ServeCli, RestartAfterKillKeepsEveryAssignment) {
  const std::string dir = ::testing::TempDir();
  std::vector<json> nodes = {testing::node_json({"n0"}), testing::node_json({"n1", "Tesla-T4", 4, "32", "128Gi"})};
  std::vector<json> pods;
  for (int i = 0; i < 8; ++i)
    pods.push_back(
        testing::pod_json({.name = "p" + std::to_string(i), .gpus = i % 2 ? 0 : 1, .gpu_milli = i % 2 ? 300 : 0}));
  std::ofstream(dir + "/sv_nodes.json") << testing::list_json(nodes).dump();
  std::ofstream(dir + "/sv_pods.json") << testing::list_json(pods).dump();
  const std::string out = dir + "/sv_pods_out.json", port_file = dir + "/sv_port";
  std::remove(out.c_str());
  std::string first;
  {
    ServeProcess s({"serve", "--nodes", dir + "/sv_nodes.json", "--pods", dir + "/sv_pods.json", "--listen",
                    "127.0.0.1:0", "--port-file", port_file, "--pods-out", out, "--url-prefix", "/gpupack"},
                   port_file);
    ASSERT_GT(s.port, 0);
    httplib::Client c("127.0.0.1", s.port);
    for (int i = 0; i < 8; ++i) {
      json args = {{"Pod", pods[i]}, {"NodeNames", {"n0", "n1"}}};
      auto f = c.Post("/gpupack/filter", args.dump(), "application/json");
      ASSERT_TRUE(f);
      ASSERT_EQ(f->status, 200);
      json b = {{"PodName", "p" + std::to_string(i)},
                {"PodNamespace", "ml"},
                {"PodUID", "uid-p" + std::to_string(i)},
                {"Node", i < 4 ? "n0" : "n1"}};
      auto r = c.Post("/gpupack/bind", b.dump(), "application/json");
      ASSERT_EQ(json::parse(r->body)["Error"], "") << r->body;
    }
    first = allocation_lines(s.port);
    // Wait (bounded) until the eighth bind is written back, then kill -9.
    for (int i = 0; i < 100; ++i) {
      std::string t = slurp(out);
      size_t n = 0;
      for (size_t p = t.find("assigned-gpus"); p != std::string::npos; p = t.find("assigned-gpus", p + 1)) ++n;
      if (n == 8) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    s.kill9();
  }
  ASSERT_NE(first.find("gpupack_gpu_allocated_milli{node=\"n1\""), std::string::npos);
  ServeProcess again(
      {"serve", "--nodes", dir + "/sv_nodes.json", "--pods", out, "--listen", "127.0.0.1:0", "--port-file", port_file},
      port_file);
  ASSERT_GT(again.port, 0);
  EXPECT_EQ(allocation_lines(again.port), first);
}

TEST(ServeCli, LogsSayWhereItServesWithRealPortsAndWhenItStops) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/lg_nodes.json") << testing::list_json({testing::node_json({"n0"})}).dump();
  std::ofstream(dir + "/lg_pods.json") << testing::list_json({}).dump();
  const std::string port_file = dir + "/lg_port", log = dir + "/lg_stderr";
  ServeProcess s({"serve", "--nodes", dir + "/lg_nodes.json", "--pods", dir + "/lg_pods.json", "--listen",
                  "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--port-file", port_file, "--log-level", "debug"},
                 port_file, log);
  ASSERT_GT(s.port, 0);
  ::kill(s.pid, SIGTERM);
  int status = 0;
  waitpid(s.pid, &status, 0);
  s.pid = -1;
  EXPECT_TRUE(WIFEXITED(status)) << status;
  const std::string text = slurp(log);
  EXPECT_THAT(text, ::testing::HasSubstr("level=info msg=serving mode=snapshot policy=fgd listen=127.0.0.1:" +
                                         std::to_string(s.port) + " "))
      << text;
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("metrics_listen=127.0.0.1:0 "))) << text;  // the real port
  EXPECT_THAT(text, ::testing::HasSubstr("metrics_listen=127.0.0.1:")) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("level=info msg=stopped signal=SIGTERM")) << text;
}

TEST(ServeCli, BadFlagsAndFilesFailClearly) {
  auto run = [](const std::string& args) {
    std::string cmd = std::string(GPUPACK_BINARY) + " serve " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[1024];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int rc = pclose(p);
    return std::make_pair(rc, out);
  };
  auto [rc1, out1] = run("--nodes /nonexistent/nodes.json --pods /nonexistent/pods.json");
  EXPECT_NE(rc1, 0);
  EXPECT_NE(out1.find("/nonexistent/nodes.json"), std::string::npos) << out1;
  auto [rc2, out2] = run("--listen nowhere --nodes a --pods b");
  EXPECT_NE(rc2, 0);
  auto [rc3, out3] = run("--policy nosuch");
  EXPECT_NE(rc3, 0);
  EXPECT_NE(out3.find("nosuch"), std::string::npos) << out3;
}

}  // namespace
}  // namespace gpupack
