// The extender driven pod by pod, as kube-scheduler would (highest score,
// ties by name), on a 60-node openb subset, places every pod where the engine
// alone (what `gpupack simulate` runs) places it, in each learning mode.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/kubectl.h"
#include "io/openb.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "server/extender_service.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;

enum class Mode { kBind, kAssume, kObjects };

TEST(ExtenderAgreement, PodByPodEqualsTheEngineInEveryLearningMode) {
  const std::string dir = std::string(GPUPACK_SHARED_DIR) + "/traces/openb";
  if (!std::filesystem::exists(dir + "/openb_node_list_gpu_node.csv"))
    GTEST_SKIP() << "openb trace not found at " << dir;
  std::vector<NodeSpec> specs = read_openb_nodes(dir + "/openb_node_list_gpu_node.csv");
  specs.resize(60);
  std::vector<TracePod> trace = read_openb_pods(dir + "/openb_pod_list_default.csv");
  trace.resize(450);
  const GpuCatalog& cat = GpuCatalog::builtin();
  std::vector<json> nodes;
  std::vector<std::string> names;
  for (const NodeSpec& n : specs) {
    nodes.push_back(testing::node_json({.name = n.name,
                                        .product = cat.spec(n.gpu_model).name,
                                        .gpus = n.gpu_count,
                                        .cpu = std::to_string(n.cpu_milli) + "m",
                                        .memory = std::to_string(n.memory_mib) + "Mi"}));
    names.push_back(n.name);
  }
  std::vector<json> pods;
  std::vector<Request> requests;
  for (const TracePod& t : trace) {
    const Request& r = t.request;
    testing::PodShape p{.ns = "default",
                        .name = t.name,
                        .cpu = std::to_string(r.cpu_milli) + "m",
                        .memory = std::to_string(r.memory_mib) + "Mi"};
    if (r.gpu_count > 0 && r.gpu_milli == kGpuMilliPerGpu)
      p.gpus = r.gpu_count;
    else if (r.gpu_count > 0)
      p.gpu_milli = r.gpu_milli;
    std::string models;
    for (size_t m = 0; m < cat.size(); ++m)
      if (r.allowed_models & model_bit(static_cast<GpuModelId>(m)))
        models += (models.empty() ? "" : ",") + cat.spec(static_cast<GpuModelId>(m)).name;
    p.models = models;
    pods.push_back(testing::pod_json(p));
    requests.push_back(parse_pod(pods.back()).request);
  }
  for (const char* policy : {"bestfit", "fgd", "dotprod", "firstfit", "capfrag"}) {
    // The engine alone, with the same target (the pods' requests).
    ClusterState state(specs);
    auto target = std::make_shared<TargetWorkload>(TargetWorkload::from_requests(requests));
    auto engine_policy = make_policy(policy, {42, target});
    Scheduler sched(*engine_policy);
    std::vector<std::string> expected;
    for (size_t i = 0; i < trace.size(); ++i) {
      const Decision d = sched.schedule(state, PodId{static_cast<int32_t>(i)}, trace[i].request);
      expected.push_back(d.placed() ? specs[index(d.assignment.node)].name : "");
    }
    for (Mode mode : {Mode::kBind, Mode::kAssume, Mode::kObjects}) {
      ServiceOptions o;
      o.policy = policy;
      o.assume_on_prioritize = mode != Mode::kBind;
      o.assume_timeout = std::chrono::hours(1);
      ExtenderService service(o);
      std::vector<K8sNode> kn;
      for (const json& j : nodes) kn.push_back(parse_node(j));
      std::vector<json> objects = pods;
      auto reload = [&] {
        std::vector<K8sPod> kp;
        for (const json& j : objects) kp.push_back(parse_pod(j));
        service.set_cluster(kn, kp, objects);
      };
      reload();
      int mismatches = 0;
      for (size_t i = 0; i < pods.size(); ++i) {
        ExtenderArgs a;
        a.pod = pods[i];
        a.node_names = names;
        ExtenderFilterResult f = service.filter(a);
        std::string chosen;
        if (!f.node_names->empty()) {
          a.node_names = *f.node_names;
          HostPriorityList scores = service.prioritize(a, nullptr);
          int64_t best = -1;
          for (const HostPriority& h : scores)
            if (h.score > best || (h.score == best && h.host < chosen)) best = h.score, chosen = h.host;
          if (mode == Mode::kBind) {
            EXPECT_EQ(service.bind({trace[i].name, "default", "uid-" + trace[i].name, chosen}).error, "");
          } else if (mode == Mode::kObjects) {
            objects[i]["spec"]["nodeName"] = chosen;
            objects[i]["status"]["phase"] = "Running";
            reload();
          }
        }
        if (chosen != expected[i] && ++mismatches <= 3)
          ADD_FAILURE() << policy << " mode " << static_cast<int>(mode) << " pod " << i << " " << trace[i].name
                        << ": extender " << chosen << ", engine " << expected[i];
      }
      EXPECT_EQ(mismatches, 0) << policy << " mode " << static_cast<int>(mode);
    }
  }
}

}  // namespace
}  // namespace gpupack
