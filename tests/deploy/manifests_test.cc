// deploy/ manifests parse, reference each other consistently, grant the
// rights gpupack serve needs and embed a scheduler config that passes the
// schema checker.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "io/k8s_config.h"

namespace gpupack {
namespace {

std::vector<YAML::Node> load(const char* file) {
  return YAML::LoadAllFromFile(std::string(GPUPACK_SOURCE_DIR) + "/deploy/" + file);
}

YAML::Node find(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name) {
  for (const auto& d : docs) {
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>() == name) return d;
  }
  return YAML::Node();
}

bool grants(const YAML::Node& role, const std::string& resource, const std::string& verb) {
  for (const auto& rule : role["rules"]) {
    bool core = false;
    for (const auto& g : rule["apiGroups"]) core = core || g.as<std::string>().empty();
    if (!core) continue;
    bool res = false, v = false;
    for (const auto& r : rule["resources"]) res = res || r.as<std::string>() == resource;
    for (const auto& x : rule["verbs"]) v = v || x.as<std::string>() == verb;
    if (res && v) return true;
  }
  return false;
}

TEST(DeployManifests, RbacGrantsWhatServeNeeds) {
  auto rbac = load("rbac.yaml");
  YAML::Node role = find(rbac, "ClusterRole", "gpupack-extender");
  ASSERT_TRUE(role);
  for (const char* verb : {"get", "list", "watch"}) {
    EXPECT_TRUE(grants(role, "nodes", verb)) << verb;
    EXPECT_TRUE(grants(role, "pods", verb)) << verb;
  }
  EXPECT_TRUE(grants(role, "pods", "patch"));
  EXPECT_TRUE(grants(role, "pods/binding", "create"));
  EXPECT_TRUE(grants(role, "configmaps", "get"));
  EXPECT_FALSE(grants(role, "pods", "delete"));  // least privilege: no evictions from serve
  YAML::Node binding = find(rbac, "ClusterRoleBinding", "gpupack-extender");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "gpupack-scheduler");
  EXPECT_TRUE(find(rbac, "ServiceAccount", "gpupack-scheduler"));
}

TEST(DeployManifests, DeploymentMatchesConfigAndService) {
  auto cm = load("scheduler-config.yaml");
  YAML::Node config_map = find(cm, "ConfigMap", "gpupack-scheduler-config");
  ASSERT_TRUE(config_map);
  YAML::Node sched = YAML::Load(config_map["data"]["scheduler-config.yaml"].as<std::string>());
  EXPECT_TRUE(check_scheduler_config(sched).empty());
  std::string url = sched["extenders"][0]["urlPrefix"].as<std::string>();

  auto dep = load("deployment.yaml");
  YAML::Node d = find(dep, "Deployment", "gpupack-scheduler");
  ASSERT_TRUE(d);
  const YAML::Node& pod = d["spec"]["template"];
  EXPECT_EQ(pod["spec"]["serviceAccountName"].as<std::string>(), "gpupack-scheduler");
  EXPECT_EQ(pod["spec"]["volumes"][0]["configMap"]["name"].as<std::string>(), "gpupack-scheduler-config");
  std::set<std::string> args;
  for (const auto& c : pod["spec"]["containers"]) {
    if (c["name"].as<std::string>() == "gpupack") {
      for (const auto& a : c["args"]) args.insert(a.as<std::string>());
    }
  }
  // The extender URL the scheduler calls is where serve listens.
  EXPECT_EQ(url, "http://127.0.0.1:8888/gpupack");
  EXPECT_TRUE(args.count("--listen=127.0.0.1:8888"));
  EXPECT_TRUE(args.count("--url-prefix=/gpupack"));
  YAML::Node svc = find(dep, "Service", "gpupack-metrics");
  ASSERT_TRUE(svc);
  EXPECT_EQ(svc["spec"]["selector"]["app.kubernetes.io/name"].as<std::string>(),
            pod["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>());
  EXPECT_EQ(sched["profiles"][0]["schedulerName"].as<std::string>(), "gpupack-scheduler");
}

}  // namespace
}  // namespace gpupack
