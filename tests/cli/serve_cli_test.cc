// `gpupack serve` as a process: snapshot mode, bind over HTTP, kill -9,
// restart from the written-back pods, same GPU assignments; flag errors.
#include <fcntl.h>
#include <gmock/gmock.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "io/kubectl.h"
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
    // Everything allocated before fork(): the child of a threaded process
    // may not allocate (another thread may hold the allocator's lock).
    std::vector<char*> argv;
    static std::string bin = GPUPACK_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int err = stderr_file.empty() ? -1 : ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid = fork();
    if (pid == 0) {
      if (err >= 0) dup2(err, 2);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    if (err >= 0) ::close(err);
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
  ASSERT_NE(first.find("gpupack_gpu_allocated_ratio{node=\"n1\""), std::string::npos);
  ServeProcess again(
      {"serve", "--nodes", dir + "/sv_nodes.json", "--pods", out, "--listen", "127.0.0.1:0", "--port-file", port_file},
      port_file);
  ASSERT_GT(again.port, 0);
  EXPECT_EQ(allocation_lines(again.port), first);
}

// kill -9 at a random moment while a client binds pod after pod, restart
// from the written pods and the journal: every bind that was acknowledged is
// there, on its node, and no GPU holds more than all of it. Several runs,
// each killed at another point.
TEST(ServeCli, KillDuringBindsLosesNoAcknowledgedBindAndDoubleBooksNoGpu) {
  const std::string dir = ::testing::TempDir();
  std::vector<json> nodes;
  std::vector<std::string> names;
  for (int n = 0; n < 80; ++n) {
    names.push_back("n" + std::to_string(n));
    nodes.push_back(testing::node_json({.name = names.back(), .gpus = 8}));
  }
  std::vector<json> pods;  // 1,000 shares of a GPU: all fit
  for (int i = 0; i < 1000; ++i)
    pods.push_back(testing::pod_json({.name = "p" + std::to_string(i), .cpu = "1", .gpu_milli = 300 + 100 * (i % 5)}));
  std::ofstream(dir + "/kb_nodes.json") << testing::list_json(nodes).dump();
  const std::string out = dir + "/kb_pods_out.json", port_file = dir + "/kb_port";
  std::mt19937 rng(7);
  for (int run = 0; run < 4; ++run) {
    std::ofstream(dir + "/kb_pods.json") << testing::list_json(pods).dump();
    std::remove(out.c_str());
    std::remove((out + ".journal").c_str());
    std::map<std::string, std::string> acked;  // pod -> node
    {
      ServeProcess s({"serve", "--nodes", dir + "/kb_nodes.json", "--pods", dir + "/kb_pods.json", "--listen",
                      "127.0.0.1:0", "--port-file", port_file, "--pods-out", out, "--assume", "off"},
                     port_file);
      ASSERT_GT(s.port, 0);
      std::atomic<bool> killed{false};
      const int after_ms = std::uniform_int_distribution<int>(30, 1500)(rng);
      std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
        killed = true;
        s.kill9();
      });
      httplib::Client c("127.0.0.1", s.port);
      c.set_read_timeout(2, 0);
      for (size_t i = 0; i < pods.size() && !killed; ++i) {
        const std::string name = "p" + std::to_string(i);
        json args = {{"Pod", pods[i]}, {"NodeNames", names}};
        auto p = c.Post("/prioritize", args.dump(), "application/json");
        if (!p || p->status != 200) break;
        std::string best;
        int64_t top = -1;
        for (const json& h : json::parse(p->body))
          if (h["Score"].get<int64_t>() > top) top = h["Score"], best = h["Host"];
        json b = {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", best}};
        auto r = c.Post("/bind", b.dump(), "application/json");
        if (!r || r->status != 200) break;
        if (json::parse(r->body)["Error"] == "") acked[name] = best;
      }
      killer.join();
    }
    ASSERT_FALSE(acked.empty()) << "run " << run << ": killed before the first bind";
    ServeProcess again({"serve", "--nodes", dir + "/kb_nodes.json", "--pods", out, "--pods-out", out, "--listen",
                        "127.0.0.1:0", "--port-file", port_file},
                       port_file);
    ASSERT_GT(again.port, 0);
    // At start the replayed pods are written (durably) to --pods-out.
    const json list = json::parse(slurp(out));
    std::map<std::string, std::string> bound;
    std::map<std::pair<std::string, int>, int> milli;  // (node, gpu) -> milli held
    for (const json& p : list["items"]) {
      const std::string node = p["spec"].value("nodeName", "");
      if (node.empty()) continue;
      bound[p["metadata"]["name"]] = node;
      const std::string a = p["metadata"]["annotations"].value("gpupack.io/assigned-gpus", "");
      ASSERT_FALSE(a.empty()) << p.dump();
      const GpuAssignmentAnnotation g = parse_assigned_gpus(a);
      for (int gpu = 0; gpu < 32; ++gpu)
        if ((g.gpu_mask >> gpu) & 1u) milli[{g.node, gpu}] += g.gpu_milli > 0 ? g.gpu_milli : 1000;
    }
    for (const auto& [pod, node] : acked) {
      ASSERT_TRUE(bound.count(pod)) << "run " << run << ": acknowledged bind of " << pod << " lost (" << acked.size()
                                    << " acknowledged)";
      EXPECT_EQ(bound[pod], node) << pod;
    }
    EXPECT_LE(bound.size(), acked.size() + 1) << "at most the one bind in flight at the kill is extra";
    for (const auto& [gpu, m] : milli) EXPECT_LE(m, 1000) << gpu.first << " GPU " << gpu.second;
    // The restarted server charges the same: a pod that needs a whole free GPU per node sees the truth.
    EXPECT_NE(allocation_lines(again.port).find("gpupack_gpu_allocated_ratio"), std::string::npos);
  }
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
