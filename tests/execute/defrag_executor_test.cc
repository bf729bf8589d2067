// The defrag executor against a fake API server with a ReplicaSet
// controller and a scheduler that honours reservations: a plan on a 50-node
// cluster completes and frees what it predicted; PodDisruptionBudgets hold
// (HTTP 429 retried, then skipped); a killed executor resumes or releases;
// only pods with a controller are ever evicted, and only by the Eviction API;
// a Deployment's (or bare ReplicaSet's) pod moves make-before-break (surge),
// never below its replica count, and a kill, stop or timeout mid-surge
// leaves the replicas as they were.
#include "execute/defrag_executor.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "support/cli_runner.h"
#include "support/fake_kube_api.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::FakeKubeApi;
using testing::fresh_temp_dir;
using ::testing::HasSubstr;
using testing::node_json;
using testing::pod_json;
using testing::PodShape;
using testing::run_gpupack;
using testing::RunResult;

std::string node_name(int i) { return fmt::format("n{:02}", i); }

// 50 nodes of 8 GPUs: n00-n39 full (one bare 8-GPU pod each, never moved),
// n40-n49 six one-GPU pods each (ReplicaSet rs-<node>, label app=<node>),
// GPUs 0-5 used; a pending 8-GPU pod of ReplicaSet "big". Freeing one of
// n40-n49 (six moves into the others' free GPUs) admits it.
struct FiftyNodes {
  std::vector<json> nodes, pods;
  FiftyNodes() {
    for (int i = 0; i < 50; ++i) {
      const std::string n = node_name(i);
      nodes.push_back(node_json({.name = n}));
      if (i < 40) {
        pods.push_back(pod_json({.name = "full-" + n, .gpus = 8, .node = n, .assigned = n + ":0,1,2,3,4,5,6,7"}));
        continue;
      }
      for (int g = 0; g < 6; ++g)
        pods.push_back(pod_json({.name = fmt::format("w-{}-{}", n, g),
                                 .cpu = "1",
                                 .gpus = 1,
                                 .node = n,
                                 .assigned = fmt::format("{}:{}", n, g),
                                 .labels = {{"app", n}},
                                 .owner = "rs-" + n}));
    }
    pods.push_back(pod_json({.name = "big", .gpus = 8, .owner = "big"}));
  }
};

std::string apply_flags(const std::string& journal, const std::string& step_timeout_s = "20") {
  return " --apply --journal " + journal + " --interval 0 --poll 0.02 --retry-429 0.05 --step-timeout " +
         step_timeout_s;
}

bool json_has_controller(const json& pod) {
  for (const json& o : pod["metadata"].value("ownerReferences", json::array()))
    if (o.value("controller", false)) return true;
  return false;
}

// What the journal's done steps predict: GPUs used per node.
std::map<std::string, int> predicted(std::map<std::string, int> used, const ExecJournal& j) {
  for (const ExecStep& s : j.steps) {
    if (s.state != "done") continue;
    if (!s.from.empty()) used[s.from] -= s.request.gpu_count;
    used[s.to] += s.request.gpu_count;
  }
  return used;
}

TEST(DefragExecutor, FiftyNodePlanCompletesAndFreesWhatItPredicted) {
  const std::string dir = fresh_temp_dir("exec-fifty");
  FiftyNodes c;
  // A budget over n40's pods that allows two disruptions.
  FakeKubeApi api(c.nodes, c.pods, {{"ml", "w-n40", {{"app", "n40"}}, 4}}, std::chrono::milliseconds(20));
  const std::map<std::string, int> before = api.gpus_used();
  const std::string journal = dir + "/journal.json";
  const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal) +
                                  " --metrics-file " + dir + "/m.prom");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const ExecJournal j = read_journal(journal);
  EXPECT_EQ(j.status, "finished");
  ASSERT_GE(j.steps.size(), 2U) << r.output;
  EXPECT_EQ(j.count("done"), static_cast<int>(j.steps.size())) << r.output;
  EXPECT_EQ(j.steps.back().kind, "admit");
  // The cluster is what the plan said: GPUs per node, the big pod running
  // on the freed node, nothing reserved any more.
  EXPECT_EQ(api.gpus_used(), predicted(before, j));
  bool big_runs = false;
  for (const json& p : api.pods())
    if (p["metadata"]["name"] == "big")
      big_runs = p["status"]["phase"] == "Running" && p["spec"]["nodeName"] == j.steps.back().to;
  EXPECT_TRUE(big_runs) << r.output;
  EXPECT_EQ(api.reservations_now(), 0);
  EXPECT_EQ(api.reservations_written(), static_cast<int>(j.steps.size()));
  // Only owned pods were evicted, only through the Eviction API, never
  // below a budget, never refused (one move at a time, each replacement
  // running before the next eviction).
  EXPECT_EQ(api.evicted().size(), j.steps.size() - 1);
  for (const json& p : api.evicted()) EXPECT_TRUE(json_has_controller(p)) << p["metadata"]["name"];
  EXPECT_EQ(api.deletes(), 0);
  EXPECT_EQ(api.refused_429(), 0);
  EXPECT_GE(api.min_running().at("ml/w-n40"), 4);
  // An Event per step, and the metrics file.
  EXPECT_EQ(api.events().size(), j.steps.size());
  EXPECT_THAT(
      testing::read_file(dir + "/m.prom"),
      HasSubstr(fmt::format("gpupack_defrag_steps{{plan=\"{}\",state=\"done\"}} {}", j.plan_id, j.steps.size())));
  EXPECT_THAT(r.output, HasSubstr(fmt::format("{} done, 0 skipped, 0 failed", j.steps.size())));
}

// Two 8-GPU nodes: a holds seven bare pods and one free GPU, b seven pods of
// ReplicaSet w under a budget whose status says one disruption is allowed
// while the pods running say none (minAvailable 7): every eviction is 429.
TEST(DefragExecutor, ABudgetThatRefusesIsRetriedThenSkippedAndReleased) {
  const std::string dir = fresh_temp_dir("exec-429");
  std::vector<json> nodes = {node_json({.name = "a"}), node_json({.name = "b"})};
  std::vector<json> pods;
  for (int i = 0; i < 7; ++i)
    pods.push_back(
        pod_json({.name = fmt::format("bare-{}", i), .gpus = 1, .node = "a", .assigned = fmt::format("a:{}", i)}));
  for (int i = 0; i < 7; ++i)
    pods.push_back(pod_json({.name = fmt::format("w-{}", i),
                             .gpus = 1,
                             .node = "b",
                             .assigned = fmt::format("b:{}", i),
                             .labels = {{"app", "w"}},
                             .owner = "w"}));
  pods.push_back(pod_json({.name = "big", .gpus = 2, .owner = "big"}));
  FakeKubeApi::Pdb pdb{"ml", "w", {{"app", "w"}}, 7, 1};
  FakeKubeApi api(nodes, pods, {pdb});
  const std::string journal = dir + "/journal.json";
  const RunResult r =
      run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal, "0.5") + " --max-429-retries 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // the admit step fails: the pod never fits
  const ExecJournal j = read_journal(journal);
  ASSERT_EQ(j.steps.size(), 2U) << r.output;
  EXPECT_EQ(j.steps[0].state, "skipped");
  EXPECT_THAT(j.steps[0].detail, HasSubstr("HTTP 429"));
  EXPECT_EQ(j.steps[0].evict_attempts, 3);
  EXPECT_EQ(j.steps[1].state, "failed");
  EXPECT_EQ(api.refused_429(), 3);
  EXPECT_TRUE(api.evicted().empty());
  EXPECT_GE(api.min_running().at("ml/w"), 7);
  EXPECT_EQ(api.reservations_now(), 0);
  EXPECT_THAT(r.output, HasSubstr("1 steps failed"));
}

// Runs gpupack in the background, output to a file.
struct Background {
  pid_t pid = -1;
  Background(const std::string& args, const std::string& log) {
    // Built before fork(): the child of a threaded process may not allocate
    // (another thread may hold the allocator's lock; under ASan it hung).
    const std::string cmd = "exec " + std::string(GPUPACK_BINARY) + " " + args + " > " + log + " 2>&1";
    pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  void kill9() {
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Background() {
    if (pid > 0) kill9();
  }
};

// Starts the fifty-node plan slowly (each replacement runs 300 ms after it
// is placed) and kills the executor once a step is done.
ExecJournal kill_mid_plan(FakeKubeApi& api, const std::string& dir, const std::string& journal) {
  Background run("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal), dir + "/run.log");
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      if (read_journal(journal).count("done") >= 1) break;
    } catch (const std::exception&) {
      // not written yet
    }
  }
  run.kill9();
  return read_journal(journal);
}

TEST(DefragExecutor, AKilledRunResumesToTheEnd) {
  const std::string dir = fresh_temp_dir("exec-resume");
  FiftyNodes c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(300));
  const std::map<std::string, int> before = api.gpus_used();
  const std::string journal = dir + "/journal.json";
  const ExecJournal cut = kill_mid_plan(api, dir, journal);
  ASSERT_EQ(cut.status, "running");
  ASSERT_GE(cut.count("done"), 1);
  ASSERT_LT(cut.count("done"), static_cast<int>(cut.steps.size()));
  // A new --apply refuses while the journal holds an unfinished plan.
  RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--resume continues it"));
  r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal) + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const ExecJournal j = read_journal(journal);
  EXPECT_EQ(j.plan_id, cut.plan_id);
  EXPECT_EQ(j.status, "finished");
  EXPECT_EQ(j.count("done"), static_cast<int>(j.steps.size())) << r.output;
  EXPECT_EQ(api.gpus_used(), predicted(before, j));
  EXPECT_EQ(api.reservations_now(), 0);
  EXPECT_EQ(api.refused_429(), 0);
  EXPECT_EQ(api.evicted().size(), j.steps.size() - 1);  // no pod evicted twice
}

TEST(DefragExecutor, AKilledRunCanBeReleasedInstead) {
  const std::string dir = fresh_temp_dir("exec-release");
  FiftyNodes c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(300));
  const std::string journal = dir + "/journal.json";
  const ExecJournal cut = kill_mid_plan(api, dir, journal);
  ASSERT_EQ(cut.status, "running");
  const RunResult r =
      run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + " --journal " + journal + " --release");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_journal(journal).status, "released");
  EXPECT_EQ(api.reservations_now(), 0);
  // Every evicted pod's replacement still runs (on the reserved GPUs or
  // wherever the scheduler put it): no pod is lost.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int running = 0;
  for (const json& p : api.pods()) running += p["metadata"]["name"] != "big" && p["status"]["phase"] == "Running";
  EXPECT_EQ(running, 40 + 60);
}

// --every: a round plans and applies once the big pod has waited past the
// bound; the next round finds nothing to do. A rolling budget too small to
// free a node moves nothing.
TEST(DefragExecutor, PeriodicRoundsApplyWhenALargePodWaitsAndKeepTheHourlyBudget) {
  const std::string dir = fresh_temp_dir("exec-every");
  FiftyNodes c;
  const auto hour_ago =
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) - std::chrono::hours(1);
  c.pods.back()["metadata"]["creationTimestamp"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", hour_ago);
  {
    FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(dir + "/j1.json") +
                                    " --every 0.2 --rounds 2 --wait-bound 10m");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("planning: ml/big (2+ GPUs) has waited"));
    EXPECT_THAT(r.output, HasSubstr("nothing to do"));
    EXPECT_EQ(read_journal(dir + "/j1.json").status, "finished");
    EXPECT_EQ(api.evicted().size(), 6U);
  }
  {
    FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(dir + "/j2.json") +
                                    " --every 0.2 --rounds 1 --wait-bound 10m --max-moves-per-hour 3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("3 moves left this hour"));
    EXPECT_TRUE(api.evicted().empty()) << r.output;
  }
  {
    // The bound not reached: nothing planned.
    FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(dir + "/j3.json") +
                                    " --every 0.2 --rounds 1 --wait-bound 2h");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("nothing to do"));
    EXPECT_TRUE(api.evicted().empty());
  }
}

// Node a: seven bare one-GPU pods on GPUs 0-6 (GPU 7 free); node b: the
// two pods of ReplicaSet web-1 (GPUs 0 and 1) and a StatefulSet's db-0 (GPU
// 2). The step moves `pod` from b to a:7.
struct SurgeCluster {
  std::vector<json> nodes = {node_json({.name = "a"}), node_json({.name = "b"})};
  std::vector<json> pods;
  SurgeCluster() {
    for (int i = 0; i < 7; ++i)
      pods.push_back(
          pod_json({.name = fmt::format("bare-{}", i), .gpus = 1, .node = "a", .assigned = fmt::format("a:{}", i)}));
    for (int i = 0; i < 2; ++i)
      pods.push_back(pod_json({.name = fmt::format("web-1-{}", i),
                               .gpus = 1,
                               .node = "b",
                               .assigned = fmt::format("b:{}", i),
                               .labels = {{"app", "web"}},
                               .owner = "web-1"}));
    pods.push_back(pod_json(
        {.name = "db-0", .gpus = 1, .node = "b", .assigned = "b:2", .owner = "db", .owner_kind = "StatefulSet"}));
  }
};

ExecJournal one_move(const std::string& pod, const std::string& owner, const std::string& owner_kind = "ReplicaSet") {
  ExecJournal j;
  j.plan_id = "p1";
  j.server = "fake";
  ExecStep s;
  s.index = 1;
  s.kind = "migrate";
  s.ns = "ml";
  s.pod = pod;
  s.uid = "uid-" + pod;
  s.owner_kind = owner_kind;
  s.owner_name = owner;
  s.owner_uid = "uid-" + owner;
  s.from = "b";
  s.to = "a";
  s.gpus = "a:7";
  s.request.gpu_count = 1;
  s.request.gpu_milli = 1000;
  s.request.cpu_milli = 4000;
  s.request.memory_mib = 16384;
  j.steps.push_back(s);
  return j;
}

ExecOptions fast_options(const std::string& journal, std::chrono::milliseconds step_timeout = std::chrono::seconds(5)) {
  ExecOptions o;
  o.journal_path = journal;
  o.interval = std::chrono::milliseconds(0);
  o.poll = std::chrono::milliseconds(20);
  o.step_timeout = step_timeout;
  o.retry_429 = std::chrono::milliseconds(50);
  return o;
}

KubeClient client_for(const FakeKubeApi& api) {
  KubeConfig cfg;
  cfg.server = api.server();
  return KubeClient(cfg, 5);
}

std::vector<std::string> names(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const json& p : pods) out.push_back(p["metadata"]["name"]);
  std::sort(out.begin(), out.end());
  return out;
}

// Waits (at most 2 s) until ReplicaSet `rs` has exactly `want` pods, none
// terminating; returns their names.
std::vector<std::string> settled_pods(const FakeKubeApi& api, const std::string& rs, size_t want) {
  auto all = [&] {
    std::vector<json> out;
    for (const json& p : api.pods())
      for (const json& o : p["metadata"].value("ownerReferences", json::array()))
        if (o.value("name", "") == rs) out.push_back(p);
    return out;
  };
  for (int i = 0; i < 100 && (all().size() != want || api.pods_of(rs).size() != want); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return names(all());
}

// The surged pod: web-1's pod on a (GPU 7) that is not one of the two first.
void expect_moved_to_a7(const FakeKubeApi& api) {
  const std::vector<json> pods = api.pods_of("web-1");
  ASSERT_EQ(pods.size(), 2U);
  EXPECT_THAT(names(pods), ::testing::Contains("web-1-1"));
  EXPECT_THAT(names(pods), ::testing::Not(::testing::Contains("web-1-0")));
  int on_a = 0;
  for (const json& p : pods)
    on_a += p["spec"].value("nodeName", "") == "a" && p["status"]["phase"] == "Running" &&
            p["metadata"]["annotations"].value("gpupack.io/assigned-gpus", "") == "a:7";
  EXPECT_EQ(on_a, 1);
}

TEST(DefragExecutor, ADeploymentsPodMovesMakeBeforeBreak) {
  const std::string dir = fresh_temp_dir("exec-surge");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(100));
  api.add_replicaset("ml", "web-1", 2, "web");
  api.set_delete_delay(std::chrono::milliseconds(150));
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(dir + "/j.json")).run(one_move("web-1-0", "web-1"));
  ASSERT_EQ(j.status, "finished");
  const ExecStep& s = j.steps[0];
  EXPECT_EQ(s.state, "done") << s.detail;
  EXPECT_EQ(s.path, "surge") << s.path_note;
  EXPECT_EQ(s.scale_kind, "Deployment");
  EXPECT_EQ(s.scale_name, "web");
  EXPECT_EQ(s.replicas_before, 2);
  EXPECT_EQ(read_journal(dir + "/j.json").steps[0].path, "surge");
  // Scaled to 3 then back to 2; never fewer than 2 Running, 3 at the peak;
  // the old pod was the one removed, by its controller, not evicted.
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
  const FakeKubeApi::Workload w = api.workload("web-1");
  EXPECT_EQ(w.replicas, 2);
  EXPECT_GE(w.min_running, 2);
  EXPECT_EQ(w.max_live, 3);
  EXPECT_EQ(api.deleted_by_controller(), (std::vector<std::string>{"web-1-0"}));
  EXPECT_TRUE(api.evicted().empty());
  EXPECT_EQ(api.deletes(), 0);
  // Done once the old pod is gone, not merely terminating.
  EXPECT_THAT(names(api.pods()), ::testing::Not(::testing::Contains("web-1-0")));
  expect_moved_to_a7(api);
  EXPECT_EQ(api.reservations_now(), 0);
  ASSERT_EQ(api.events().size(), 1U);
  EXPECT_EQ(api.events()[0]["reason"], "GpupackDefragMoved");
}

TEST(DefragExecutor, ABareReplicaSetSurgesItself) {
  const std::string dir = fresh_temp_dir("exec-surge-rs");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(50));
  api.add_replicaset("ml", "web-1", 2);
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(dir + "/j.json")).run(one_move("web-1-0", "web-1"));
  EXPECT_EQ(j.steps[0].state, "done") << j.steps[0].detail;
  EXPECT_EQ(j.steps[0].scale_kind, "ReplicaSet");
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
  EXPECT_GE(api.workload("web-1").min_running, 2);
  EXPECT_TRUE(api.evicted().empty());
  expect_moved_to_a7(api);
}

// StatefulSet, autoscaled, paused or rolling Deployment, no permission to
// patch pods, --surge never: today's path (evict, then wait), the reason in the journal.
TEST(DefragExecutor, OwnersThatCannotSurgeAreEvicted) {
  struct Case {
    std::string name, pod, owner, owner_kind, note;
    std::function<void(FakeKubeApi&)> setup;
    SurgeMode mode = SurgeMode::kAuto;
  };
  const std::vector<Case> cases = {
      {"statefulset", "db-0", "db", "StatefulSet", "StatefulSet", [](FakeKubeApi&) {}},
      {"hpa", "web-1-0", "web-1", "ReplicaSet", "HorizontalPodAutoscaler hpa-web scales Deployment web",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.add_hpa("ml", "hpa-web", "Deployment", "web");
       }},
      {"paused", "web-1-0", "web-1", "ReplicaSet", "Deployment web is paused",
       [](FakeKubeApi& api) { api.add_replicaset("ml", "web-1", 2, "web", true); }},
      {"rolling", "web-1-0", "web-1", "ReplicaSet", "Deployment web is being rolled out",
       [](FakeKubeApi& api) { api.add_replicaset("ml", "web-1", 2, "web", false, true); }},
      {"no-pod-patch", "web-1-0", "web-1", "ReplicaSet",
       "cannot set the old pod's controller.kubernetes.io/pod-deletion-cost",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.set_forbid_pod_patch(true);
       }},
      {"never", "web-1-0", "web-1", "ReplicaSet", "",
       [](FakeKubeApi& api) { api.add_replicaset("ml", "web-1", 2, "web"); }, SurgeMode::kNever},
      // Malformed replies: a reason to evict, never a crash, and never read
      // as "no controller" (a bare ReplicaSet scaled under its Deployment).
      {"controller-not-boolean", "web-1-0", "web-1", "ReplicaSet",
       "ReplicaSet ml/web-1: metadata.ownerReferences[0].controller: expected a boolean",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.set_owner_tamper([](nlohmann::json& o) {
           if (o["kind"] == "ReplicaSet") o["metadata"]["ownerReferences"][0]["controller"] = "true";
         });
       }},
      {"two-controllers", "web-1-0", "web-1", "ReplicaSet", "a second controller",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.set_owner_tamper([](nlohmann::json& o) {
           if (o["kind"] != "ReplicaSet") return;
           nlohmann::json again = o["metadata"]["ownerReferences"][0];
           again["name"] = "web-2";
           o["metadata"]["ownerReferences"].push_back(again);
         });
       }},
      {"paused-not-boolean", "web-1-0", "web-1", "ReplicaSet", "an owner object the API returned is malformed",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.set_owner_tamper([](nlohmann::json& o) {
           if (o["kind"] == "Deployment") o["spec"]["paused"] = "no";
         });
       }},
      {"metadata-not-object", "web-1-0", "web-1", "ReplicaSet", "an owner object the API returned is malformed",
       [](FakeKubeApi& api) {
         api.add_replicaset("ml", "web-1", 2, "web");
         api.set_owner_tamper([](nlohmann::json& o) {
           if (o["kind"] == "ReplicaSet") o["metadata"] = nlohmann::json::array();
         });
       }},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const std::string dir = fresh_temp_dir("exec-nosurge-" + k.name);
    SurgeCluster c;
    FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
    k.setup(api);
    const KubeClient client = client_for(api);
    ExecOptions o = fast_options(dir + "/j.json");
    o.surge = k.mode;
    const ExecJournal j = DefragExecutor(client, o).run(one_move(k.pod, k.owner, k.owner_kind));
    const ExecStep& s = j.steps[0];
    EXPECT_EQ(s.state, "done") << s.detail;
    EXPECT_EQ(s.path, "evict");
    if (k.note.empty()) {
      EXPECT_EQ(s.path_note, "");
    } else {
      EXPECT_THAT(s.path_note, HasSubstr(k.note));
    }
    ASSERT_EQ(api.evicted().size(), 1U);
    EXPECT_EQ(api.evicted()[0]["metadata"]["name"], k.pod);
    EXPECT_TRUE(api.scale_patches().empty());
    EXPECT_EQ(read_journal(dir + "/j.json").steps[0].path, "evict");
  }
}

// The journal as a kill -9 right after the `state` write leaves it.
ExecJournal killed_after_scale_up(FakeKubeApi& api, const std::string& journal,
                                  const std::string& state = "scaled-up") {
  const KubeClient client = client_for(api);
  ExecOptions o = fast_options(journal);
  o.on_step = [state](const ExecStep& s) {
    if (s.state == state) throw std::runtime_error("killed");
  };
  EXPECT_THROW(DefragExecutor(client, o).run(one_move("web-1-0", "web-1")), std::runtime_error);
  return read_journal(journal);
}

TEST(DefragExecutor, AKillMidSurgeResumesWithTheReplicaCountRestored) {
  const std::string dir = fresh_temp_dir("exec-surge-kill");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(200));
  api.add_replicaset("ml", "web-1", 2, "web");
  const std::string journal = dir + "/j.json";
  ExecJournal cut = killed_after_scale_up(api, journal);
  ASSERT_EQ(cut.steps[0].state, "scaled-up");
  EXPECT_EQ(cut.steps[0].replicas_before, 2);
  EXPECT_EQ(cut.steps[0].replicas_surge, 3);
  EXPECT_EQ(api.workload("web-1").replicas, 3);
  // A kill between the scale-up and its journal write: the journal still
  // says "reserved", the cluster has the scale-up. Not scaled up twice.
  cut.steps[0].state = "reserved";
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(journal)).run(cut);
  EXPECT_EQ(j.status, "finished");
  EXPECT_EQ(j.steps[0].state, "done") << j.steps[0].detail;
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_GE(api.workload("web-1").min_running, 2);
  EXPECT_TRUE(api.evicted().empty());
  expect_moved_to_a7(api);
  EXPECT_EQ(api.reservations_now(), 0);
}

// A kill between the scale-down and its journal write: resumed, the step
// sees the count restored and waits for the old pod; nothing scaled again.
TEST(DefragExecutor, AKillAfterTheScaleDownResumesToDone) {
  const std::string dir = fresh_temp_dir("exec-surge-kill-down");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(50));
  api.add_replicaset("ml", "web-1", 2, "web");
  api.set_delete_delay(std::chrono::milliseconds(200));
  const std::string journal = dir + "/j.json";
  ExecJournal cut = killed_after_scale_up(api, journal, "scaled-down");
  ASSERT_EQ(cut.steps[0].state, "scaled-down");
  cut.steps[0].state = "scaled-up";
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(journal)).run(cut);
  EXPECT_EQ(j.steps[0].state, "done") << j.steps[0].detail;
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_GE(api.workload("web-1").min_running, 2);
  expect_moved_to_a7(api);
}

TEST(DefragExecutor, AKillMidSurgeReleasedRestoresTheReplicaCount) {
  const std::string dir = fresh_temp_dir("exec-surge-release");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(200));
  api.add_replicaset("ml", "web-1", 2, "web");
  const std::string journal = dir + "/j.json";
  const ExecJournal cut = killed_after_scale_up(api, journal);
  ASSERT_EQ(cut.steps[0].state, "scaled-up");
  // Let the surged pod run: the release must still remove it, not web-1-0.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(journal)).release_all(read_journal(journal));
  EXPECT_EQ(j.status, "released");
  EXPECT_EQ(read_journal(journal).status, "released");
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_EQ(settled_pods(api, "web-1", 2), (std::vector<std::string>{"web-1-0", "web-1-1"}));
  EXPECT_GE(api.workload("web-1").min_running, 2);
  EXPECT_EQ(api.reservations_now(), 0);
}

TEST(DefragExecutor, ASurgedPodThatDoesNotRunInTimeIsRolledBack) {
  const std::string dir = fresh_temp_dir("exec-surge-timeout");
  SurgeCluster c;
  // No scheduler: the surged pod stays pending.
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20), false);
  api.add_replicaset("ml", "web-1", 2, "web");
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(dir + "/j.json", std::chrono::milliseconds(300)))
                            .run(one_move("web-1-0", "web-1"));
  const ExecStep& s = j.steps[0];
  EXPECT_EQ(s.state, "failed");
  EXPECT_THAT(s.detail, HasSubstr("no new pod running on a"));
  EXPECT_THAT(s.detail, HasSubstr("back to 2 replicas"));
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_EQ(settled_pods(api, "web-1", 2), (std::vector<std::string>{"web-1-0", "web-1-1"}));
  EXPECT_GE(api.workload("web-1").min_running, 2);
  EXPECT_TRUE(api.evicted().empty());
  EXPECT_EQ(api.reservations_now(), 0);
}

TEST(DefragExecutor, ASurgedPodElsewhereIsRolledBack) {
  const std::string dir = fresh_temp_dir("exec-surge-elsewhere");
  SurgeCluster c;
  // a:7 taken since the plan: the surged pod lands on b (a scheduler that
  // does not hold it for its reserved GPUs).
  c.pods.push_back(pod_json({.name = "blocker", .gpus = 1, .node = "a", .assigned = "a:7"}));
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
  api.set_hold_reserved(false);
  api.add_replicaset("ml", "web-1", 2, "web");
  const KubeClient client = client_for(api);
  const ExecJournal j = DefragExecutor(client, fast_options(dir + "/j.json")).run(one_move("web-1-0", "web-1"));
  const ExecStep& s = j.steps[0];
  EXPECT_EQ(s.state, "failed");
  EXPECT_THAT(s.detail, HasSubstr("started on b, not on a"));
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  // The surged pod (running, newer, lowest cost) goes; the old one stays.
  EXPECT_EQ(settled_pods(api, "web-1", 2), (std::vector<std::string>{"web-1-0", "web-1-1"}));
  EXPECT_GE(api.workload("web-1").min_running, 2);
  EXPECT_TRUE(api.evicted().empty());
}

// Through the command line: a pending 6-GPU pod needs one of web's pods
// moved from b to a's last GPU (db-0 is exempt). --surge auto (the
// default) surges, --surge never evicts.
TEST(DefragExecutor, TheCommandLineSurgesByDefaultAndEvictsWithSurgeNever) {
  for (const std::string mode : {"", "auto", "never"}) {
    SCOPED_TRACE("--surge " + mode);
    const std::string dir = fresh_temp_dir("exec-surge-cli-" + mode);
    SurgeCluster c;
    c.pods.back()["metadata"]["labels"] = {{"gpupack.io/defrag", "never"}};
    c.pods.push_back(pod_json({.name = "big", .gpus = 6, .owner = "big"}));
    FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(20));
    api.add_replicaset("ml", "web-1", 2, "web");
    const std::string journal = dir + "/journal.json";
    const RunResult r = run_gpupack("defrag --kubeconfig " + api.kubeconfig(dir) + apply_flags(journal) +
                                    (mode.empty() ? "" : " --surge " + mode));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const ExecJournal j = read_journal(journal);
    ASSERT_EQ(j.steps.size(), 2U) << r.output;
    EXPECT_EQ(j.count("done"), 2) << r.output;
    EXPECT_EQ(j.steps[0].owner_name, "web-1");
    EXPECT_EQ(j.steps[0].path, mode == "never" ? "evict" : "surge") << j.steps[0].path_note;
    EXPECT_EQ(api.evicted().size(), mode == "never" ? 1U : 0U);
    if (mode == "never") {
      EXPECT_EQ(api.workload("web-1").min_running, 1);  // what surge avoids
    } else {
      EXPECT_THAT(r.output, HasSubstr("scaled-up"));
      EXPECT_GE(api.workload("web-1").min_running, 2);
      EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2}));
    }
  }
}

// Someone else scales the owner mid-surge: the executor sees replicas it
// did not set and leaves them (no scale-down over the other change).
TEST(DefragExecutor, AConcurrentScaleIsNeverOverwritten) {
  const std::string dir = fresh_temp_dir("exec-surge-concurrent");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(50));
  api.add_replicaset("ml", "web-1", 2, "web");
  const KubeClient client = client_for(api);
  ExecOptions o = fast_options(dir + "/j.json");
  o.on_step = [&api](const ExecStep& s) {
    if (s.state == "scaled-up") api.set_replicas("web-1", 5);
  };
  const ExecJournal j = DefragExecutor(client, o).run(one_move("web-1-0", "web-1"));
  EXPECT_EQ(j.steps[0].state, "failed");
  EXPECT_THAT(j.steps[0].detail, HasSubstr("has 5 replicas, neither 2 nor 3"));
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3}));
  EXPECT_EQ(api.workload("web-1").replicas, 5);
  EXPECT_EQ(api.reservations_now(), 0);
}

TEST(DefragExecutor, AStopMidSurgeRestoresTheReplicasAndResumes) {
  const std::string dir = fresh_temp_dir("exec-surge-stop");
  SurgeCluster c;
  FakeKubeApi api(c.nodes, c.pods, {}, std::chrono::milliseconds(200));
  api.add_replicaset("ml", "web-1", 2, "web");
  const std::string journal = dir + "/j.json";
  const KubeClient client = client_for(api);
  ExecOptions o = fast_options(journal);
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  o.stop = [stopped] { return stopped->load(); };
  o.on_step = [stopped](const ExecStep& s) {
    if (s.state == "scaled-up") *stopped = true;
  };
  const ExecJournal cut = DefragExecutor(client, o).run(one_move("web-1-0", "web-1"));
  EXPECT_EQ(cut.status, "aborted");
  EXPECT_EQ(cut.steps[0].state, "planned");
  EXPECT_EQ(read_journal(journal).steps[0].state, "planned");
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_EQ(api.reservations_now(), 0);
  EXPECT_EQ(settled_pods(api, "web-1", 2), (std::vector<std::string>{"web-1-0", "web-1-1"}));
  // Resumed: the move is made anew, and still make-before-break.
  const ExecJournal j = DefragExecutor(client, fast_options(journal)).run(read_journal(journal));
  EXPECT_EQ(j.status, "finished");
  EXPECT_EQ(j.steps[0].state, "done") << j.steps[0].detail;
  EXPECT_EQ(api.scale_patches(), (std::vector<int>{3, 2, 3, 2}));
  EXPECT_EQ(api.workload("web-1").replicas, 2);
  EXPECT_GE(api.workload("web-1").min_running, 2);
  expect_moved_to_a7(api);
}

// A swap (defrag/swaps.h): x-0 on a:0 and y-0 on b:0 trade GPUs, every
// other GPU of both nodes taken. x-0 is parked (evicted; its replacement
// waits, held off every other GPU, until b:0 frees), y-0 moves onto a:0,
// then x's replacement lands on b:0. A park that does not happen skips its
// cycle: nothing else is evicted.
std::vector<json> swap_pods() {
  std::vector<json> pods;
  for (const char* n : {"a", "b"})
    for (int g = 1; g < 8; ++g)
      pods.push_back(pod_json(
          {.name = fmt::format("bare-{}-{}", n, g), .gpus = 1, .node = n, .assigned = fmt::format("{}:{}", n, g)}));
  pods.push_back(
      pod_json({.name = "x-0", .gpus = 1, .node = "a", .assigned = "a:0", .labels = {{"app", "x"}}, .owner = "x"}));
  pods.push_back(pod_json({.name = "y-0", .gpus = 1, .node = "b", .assigned = "b:0", .owner = "y"}));
  // A free GPU elsewhere: a replacement not held would start there.
  pods.push_back(pod_json({.name = "bare-c", .gpus = 1, .node = "c", .assigned = "c:0"}));
  return pods;
}

ExecJournal swap_journal() {
  ExecJournal j;
  j.plan_id = "p1";
  j.server = "fake";
  const auto step = [](int index, const char* kind, const char* pod, const char* owner, const char* from,
                       const char* to, bool parked) {
    ExecStep s;
    s.index = index;
    s.kind = kind;
    s.ns = "ml";
    s.pod = pod;
    s.uid = std::string("uid-") + pod;
    s.owner_kind = "ReplicaSet";
    s.owner_name = owner;
    s.owner_uid = std::string("uid-") + owner;
    s.from = from;
    s.to = to;
    s.gpus = std::string(to) + ":0";
    s.request.gpu_count = 1;
    s.request.gpu_milli = 1000;
    s.request.cpu_milli = 4000;
    s.request.memory_mib = 16384;
    s.parked = parked;
    return s;
  };
  j.steps = {step(1, "evict", "x-0", "x", "a", "b", true), step(2, "evict", "y-0", "y", "b", "a", false),
             step(3, "land", "x-0", "x", "", "b", false)};
  return j;
}

TEST(DefragExecutor, ASwapParksOnePodWhileTheOtherMoves) {
  const std::string dir = fresh_temp_dir("exec-swap");
  std::vector<json> nodes = {node_json({.name = "a"}), node_json({.name = "b"}), node_json({.name = "c"})};
  FakeKubeApi api(nodes, swap_pods(), {}, std::chrono::milliseconds(50));
  const KubeClient client = client_for(api);
  ExecOptions o = fast_options(dir + "/j.json");
  o.surge = SurgeMode::kNever;
  const ExecJournal j = DefragExecutor(client, o).run(swap_journal());
  ASSERT_EQ(j.status, "finished") << journal_to_json(j).dump(2);
  for (const ExecStep& s : j.steps) EXPECT_EQ(s.state, "done") << s.index << ": " << s.detail;
  EXPECT_EQ(j.steps[0].path_note, "parked: its target frees later in the plan");
  // Each replacement on the other's GPU, nothing on c's free GPUs.
  for (const auto& [rs, gpus] : {std::pair{"x", "b:0"}, std::pair{"y", "a:0"}}) {
    const std::vector<json> pods = api.pods_of(rs);
    ASSERT_EQ(pods.size(), 1U) << rs;
    EXPECT_EQ(pods[0]["status"]["phase"], "Running") << rs;
    EXPECT_EQ(pods[0]["metadata"]["annotations"].value("gpupack.io/assigned-gpus", ""), gpus) << rs;
  }
  EXPECT_EQ(api.gpus_used().at("c"), 1);
  EXPECT_EQ(api.evicted().size(), 2U);
  EXPECT_EQ(api.reservations_now(), 0);
  const ExecJournal back = journal_from_json(journal_to_json(j), "swap");
  EXPECT_TRUE(back.steps[0].parked);
  EXPECT_EQ(back.steps[2].kind, "land");
}

TEST(DefragExecutor, AParkRefusedByABudgetSkipsItsCycle) {
  const std::string dir = fresh_temp_dir("exec-swap-429");
  std::vector<json> nodes = {node_json({.name = "a"}), node_json({.name = "b"}), node_json({.name = "c"})};
  FakeKubeApi api(nodes, swap_pods(), {{"ml", "x", {{"app", "x"}}, 1}});
  const KubeClient client = client_for(api);
  ExecOptions o = fast_options(dir + "/j.json");
  o.surge = SurgeMode::kNever;
  o.max_429_retries = 1;
  const ExecJournal j = DefragExecutor(client, o).run(swap_journal());
  EXPECT_EQ(j.status, "finished");
  EXPECT_EQ(j.steps[0].state, "skipped");
  EXPECT_EQ(j.steps[1].state, "skipped");
  EXPECT_THAT(j.steps[1].detail, HasSubstr("step 1"));
  EXPECT_EQ(j.steps[2].state, "skipped");
  EXPECT_TRUE(api.evicted().empty());
  EXPECT_EQ(api.reservations_now(), 0);
}

TEST(DefragExecutor, JournalRoundTripsAndRefusesBarePodMoves) {
  ExecJournal j;
  j.plan_id = "p1";
  j.server = "https://k";
  j.status = "running";
  ExecStep s;
  s.index = 1;
  s.kind = "evict";
  s.ns = "ml";
  s.pod = "w-0";
  s.uid = "u0";
  s.owner_kind = "ReplicaSet";
  s.owner_name = "w";
  s.owner_uid = "rs";
  s.from = "b";
  s.to = "a";
  s.gpus = "a:7";
  s.request.gpu_count = 1;
  s.request.gpu_milli = 1000;
  s.state = "reserved";
  s.reserved = true;
  s.known_uids = {"u0", "u1"};
  j.steps.push_back(s);
  const ExecJournal back = journal_from_json(journal_to_json(j), "test");
  EXPECT_EQ(journal_to_json(back), journal_to_json(j));
  // A journal from before make-before-break (no path, scale or newUid)
  // reads as it did: no path chosen, nothing scaled.
  json old = journal_to_json(j);
  for (const char* k : {"path", "pathNote", "scale", "newUid"}) old["steps"][0].erase(k);
  const ExecJournal old_back = journal_from_json(old, "old");
  EXPECT_EQ(old_back.steps[0].path, "");
  EXPECT_EQ(old_back.steps[0].replicas_before, -1);
  EXPECT_EQ(old_back.steps[0].replicas_surge, -1);
  EXPECT_FALSE(old_back.steps[0].surge_pending());
  // A surge step mid-way round-trips with its record.
  ExecJournal surged = j;
  surged.steps[0].state = "scaled-up";
  surged.steps[0].path = "surge";
  surged.steps[0].scale_kind = "Deployment";
  surged.steps[0].scale_name = "w";
  surged.steps[0].replicas_before = 4;
  surged.steps[0].replicas_surge = 5;
  const ExecJournal surged_back = journal_from_json(journal_to_json(surged), "test");
  EXPECT_EQ(journal_to_json(surged_back), journal_to_json(surged));
  EXPECT_TRUE(surged_back.steps[0].surge_pending());
  json bad_surge = journal_to_json(surged);
  bad_surge["steps"][0]["scale"]["replicasSurge"] = 7;
  EXPECT_THROW(journal_from_json(bad_surge, "j.json"), std::runtime_error);
  // The scaled object's name goes into an API path: one that is not a name is refused.
  json bad_name = journal_to_json(surged);
  bad_name["steps"][0]["scale"]["name"] = "../../nodes/x";
  EXPECT_THROW(journal_from_json(bad_name, "j.json"), std::runtime_error);
  json bad_kind = journal_to_json(surged);
  bad_kind["steps"][0]["scale"]["kind"] = "StatefulSet";  // never scaled as if it were a ReplicaSet
  EXPECT_THROW(journal_from_json(bad_kind, "j.json"), std::runtime_error);
  const json value = json::parse(reservation_value(j, s, std::chrono::system_clock::time_point{}));
  EXPECT_EQ(value["for"]["uid"], "rs");
  EXPECT_EQ(value["gpus"], "a:7");
  EXPECT_EQ(value["expires"], "1970-01-01T00:00:00Z");
  // What the extender reads back (io/kubectl.h node_reservations).
  K8sNode node;
  node.spec.name = "a";
  node.annotations.set(s.reservation_key(j.plan_id), reservation_value(j, s, std::chrono::system_clock::time_point{}));
  std::vector<std::string> errors;
  const std::vector<GpuReservation> read = node_reservations(node, &errors);
  ASSERT_EQ(read.size(), 1U) << (errors.empty() ? "" : errors[0]);
  EXPECT_EQ(read[0].key, "reservation.gpupack.io/p1.1");
  EXPECT_EQ(read[0].for_kind, "ReplicaSet");
  EXPECT_EQ(read[0].for_uid, "rs");
  EXPECT_EQ(read[0].gpus.gpu_mask, 1u << 7);
  EXPECT_EQ(read[0].request.gpu_count, 1);
  EXPECT_EQ(read[0].expires_unix_s, 0);
  json bad = journal_to_json(j);
  bad["steps"][0]["state"] = "halfway";
  EXPECT_THROW(journal_from_json(bad, "j.json"), std::runtime_error);

  // A plan that moves a pod without a controller is refused.
  ClusterState state({NodeSpec{.name = "a", .cpu_milli = 8000, .memory_mib = 8192, .gpu_count = 2},
                      NodeSpec{.name = "b", .cpu_milli = 8000, .memory_mib = 8192, .gpu_count = 2}});
  K8sPod bare;
  bare.namespace_name = "ml";
  bare.name = "solo";
  DefragPlan plan;
  PlanStep step;
  step.kind = MoveKind::kEvict;
  step.pod = PodId{0};
  step.from.node = NodeId{0};
  step.to.node = NodeId{1};
  plan.steps.push_back(step);
  EXPECT_THROW(make_journal(plan, {bare}, state, "p", "s"), std::invalid_argument);
}

}  // namespace
}  // namespace gpupack
