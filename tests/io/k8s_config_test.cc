#include "io/k8s_config.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpupack {
namespace {

bool mentions(const std::vector<std::string>& problems, std::string_view part) {
  for (const auto& p : problems) {
    if (p.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(K8sConfig, TimeSlicingConfigParsesBackAndChecks) {
  SharingConfig cfg;
  cfg.resources = {{"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.5gb", 2}};
  cfg.mig_strategy = "mixed";
  YAML::Node doc = YAML::Load(device_plugin_config_yaml(cfg));
  EXPECT_TRUE(check_device_plugin_config(doc).empty());
  EXPECT_EQ(doc["version"].as<std::string>(), "v1");
  EXPECT_EQ(doc["flags"]["migStrategy"].as<std::string>(), "mixed");
  EXPECT_EQ(doc["sharing"]["timeSlicing"]["resources"][1]["name"].as<std::string>(), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(doc["sharing"]["timeSlicing"]["resources"][0]["replicas"].as<int>(), 4);
  EXPECT_FALSE(doc["sharing"]["mps"]);

  // The checker catches what the device plugin would reject.
  doc["sharing"]["timeSlicing"]["resources"][0]["replicas"] = 1;
  EXPECT_TRUE(mentions(check_device_plugin_config(doc), "sharing.timeSlicing.resources[0].replicas: must be >= 2"));
  doc["sharing"]["timeSlicing"]["resources"] = YAML::Node(YAML::NodeType::Sequence);
  EXPECT_TRUE(mentions(check_device_plugin_config(doc), "must be a non-empty list"));
  doc["version"] = "v2";
  EXPECT_TRUE(mentions(check_device_plugin_config(doc), "version: must be \"v1\""));
}

TEST(K8sConfig, MpsConfigRules) {
  SharingConfig cfg;
  cfg.mode = SharingConfig::Mode::kMps;
  cfg.resources = {{"nvidia.com/gpu", 10}};
  YAML::Node doc = YAML::Load(device_plugin_config_yaml(cfg));
  EXPECT_TRUE(check_device_plugin_config(doc).empty());
  EXPECT_EQ(doc["sharing"]["mps"]["resources"][0]["replicas"].as<int>(), 10);

  cfg.resources = {{"nvidia.com/mig-1g.5gb", 2}};
  EXPECT_THROW(device_plugin_config_yaml(cfg), std::invalid_argument);
  cfg.resources = {{"nvidia.com/gpu", 49}};
  EXPECT_THROW(device_plugin_config_yaml(cfg), std::invalid_argument);
  cfg.resources = {};
  EXPECT_THROW(device_plugin_config_yaml(cfg), std::invalid_argument);

  YAML::Node both = YAML::Load("version: v1\nsharing:\n  mps: {resources: [{name: nvidia.com/gpu, replicas: 60}]}\n"
                               "  timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}\n");
  auto p = check_device_plugin_config(both);
  EXPECT_TRUE(mentions(p, "mutually exclusive"));
  EXPECT_TRUE(mentions(p, "at most 48"));
}

TEST(K8sConfig, MigPartedSkeleton) {
  EXPECT_EQ(parse_profile_counts("1g.10gb=2,2g.20gb=1,3g.40gb=1"),
            (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_TRUE(valid_mig_profile_name("1c.2g.20gb+me"));
  EXPECT_FALSE(valid_mig_profile_name("2g20gb"));
  EXPECT_THROW(parse_profile_counts("1g.10gb"), std::invalid_argument);
  EXPECT_THROW(parse_profile_counts("1g.10gb=2,1g.10gb=1"), std::invalid_argument);
  EXPECT_THROW(parse_profile_counts("big=1"), std::invalid_argument);

  MigPartedConfig cfg;
  cfg["all-disabled"] = {MigPartedEntry{{}, std::nullopt, false, {}}};
  cfg["all-balanced"] = {MigPartedEntry{{"0x233010DE"}, std::nullopt, true, parse_profile_counts("1g.10gb=2,2g.20gb=1,3g.40gb=1")}};
  cfg["split"] = {MigPartedEntry{{}, std::vector<int>{0, 1}, false, {}},
                  MigPartedEntry{{}, std::vector<int>{2}, true, {{"3g.40gb", 2}}}};
  YAML::Node doc = YAML::Load(mig_parted_config_yaml(cfg));
  EXPECT_TRUE(check_mig_parted_config(doc).empty()) << mig_parted_config_yaml(cfg);
  EXPECT_EQ(doc["mig-configs"]["all-disabled"][0]["devices"].as<std::string>(), "all");
  EXPECT_FALSE(doc["mig-configs"]["all-disabled"][0]["mig-enabled"].as<bool>());
  EXPECT_EQ(doc["mig-configs"]["all-balanced"][0]["mig-devices"]["1g.10gb"].as<int>(), 2);
  EXPECT_EQ(doc["mig-configs"]["all-balanced"][0]["device-filter"][0].as<std::string>(), "0x233010DE");
  EXPECT_EQ(doc["mig-configs"]["split"][1]["devices"][0].as<int>(), 2);
  // A plain 0x... PCI id would read as an integer in YAML 1.1 loaders.
  YAML::Node unquoted = YAML::Load("version: v1\nmig-configs:\n  a:\n    - device-filter: [0x233010DE]\n"
                                   "      devices: all\n      mig-enabled: false\n");
  EXPECT_TRUE(mentions(check_mig_parted_config(unquoted), "must be quoted"));

  doc["mig-configs"]["split"][0]["mig-devices"]["1g.10gb"] = 1;  // disabled GPU with devices
  doc["mig-configs"]["split"][1]["devices"] = "some";
  doc["extra"] = 1;
  auto p = check_mig_parted_config(doc);
  EXPECT_TRUE(mentions(p, "mig-configs.split[0].mig-devices: must be empty when mig-enabled is false"));
  EXPECT_TRUE(mentions(p, "mig-configs.split[1].devices: a string must be \"all\""));
  EXPECT_TRUE(mentions(p, "extra: unknown top-level key"));

  MigPartedEntry bad{{}, std::nullopt, false, {{"1g.10gb", 1}}};
  EXPECT_THROW(mig_parted_config_yaml({{"x", {bad}}}), std::invalid_argument);
}

TEST(K8sConfig, DeschedulerPolicies) {
  DeschedulerConfig low;
  YAML::Node doc = YAML::Load(descheduler_policy_yaml(low));
  EXPECT_TRUE(check_descheduler_policy(doc).empty()) << descheduler_policy_yaml(low);
  EXPECT_EQ(doc["profiles"][0]["pluginConfig"][1]["name"].as<std::string>(), "LowNodeUtilization");
  EXPECT_EQ(doc["profiles"][0]["pluginConfig"][1]["args"]["thresholds"]["nvidia.com/gpu"].as<int>(), 20);
  EXPECT_EQ(doc["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]["nvidia.com/gpu"].as<int>(), 50);
  EXPECT_EQ(doc["profiles"][0]["plugins"]["balance"]["enabled"][0].as<std::string>(), "LowNodeUtilization");

  DeschedulerConfig high;
  high.strategy = DeschedulerConfig::Strategy::kHighNodeUtilization;
  high.thresholds = {{"cpu", 30}, {"nvidia.com/gpu", 40}};
  YAML::Node h = YAML::Load(descheduler_policy_yaml(high));
  EXPECT_TRUE(check_descheduler_policy(h).empty());
  EXPECT_FALSE(h["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]);

  low.target_thresholds["nvidia.com/gpu"] = 10;
  EXPECT_THROW(descheduler_policy_yaml(low), std::invalid_argument);
  DeschedulerConfig nogpu;
  nogpu.thresholds.erase("nvidia.com/gpu");
  EXPECT_THROW(descheduler_policy_yaml(nogpu), std::invalid_argument);

  doc["profiles"][0]["pluginConfig"][1]["args"]["thresholds"]["cpu"] = 120;
  doc["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]["nvidia.com/gpu"] = 5;
  doc["kind"] = "Policy";
  auto p = check_descheduler_policy(doc);
  EXPECT_TRUE(mentions(p, "thresholds.cpu: must be an integer percent"));
  EXPECT_TRUE(mentions(p, "targetThresholds.nvidia.com/gpu: below its threshold"));
  EXPECT_TRUE(mentions(p, "kind: must be \"DeschedulerPolicy\""));
}

TEST(K8sConfig, SchedulerConfigurationExtenders) {
  SchedulerExtenderConfig cfg;
  cfg.managed_resources = {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"};
  YAML::Node doc = YAML::Load(scheduler_config_yaml(cfg));
  EXPECT_TRUE(check_scheduler_config(doc).empty()) << scheduler_config_yaml(cfg);
  const YAML::Node& e = doc["extenders"][0];
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "http://127.0.0.1:8888/gpupack");
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  EXPECT_EQ(e["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_EQ(e["weight"].as<int>(), 2);
  EXPECT_FALSE(e["enableHTTPS"].as<bool>());
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_EQ(e["httpTimeout"].as<std::string>(), "10s");
  EXPECT_EQ(e["managedResources"][1]["name"].as<std::string>(), "nvidia.com/mig-1g.10gb");
  EXPECT_TRUE(e["managedResources"][1]["ignoredByScheduler"].as<bool>());
  EXPECT_EQ(doc["profiles"][0]["schedulerName"].as<std::string>(), "gpupack-scheduler");

  SchedulerExtenderConfig zero = cfg;
  zero.weight = 0;
  EXPECT_THROW(scheduler_config_yaml(zero), std::invalid_argument);
  SchedulerExtenderConfig dup = cfg;
  dup.managed_resources = {"nvidia.com/gpu", "nvidia.com/gpu"};
  EXPECT_THROW(scheduler_config_yaml(dup), std::invalid_argument);
  SchedulerExtenderConfig core = cfg;
  core.managed_resources = {"cpu"};
  EXPECT_THROW(scheduler_config_yaml(core), std::invalid_argument);
  SchedulerExtenderConfig timeout = cfg;
  timeout.http_timeout = "10";
  EXPECT_THROW(scheduler_config_yaml(timeout), std::invalid_argument);

  doc["extenders"].push_back(doc["extenders"][0]);  // a second binder managing the same resources
  doc["extenders"][0]["weight"] = 0;
  doc["extenders"][0]["enableHTTPS"] = "maybe";
  auto p = check_scheduler_config(doc);
  EXPECT_TRUE(mentions(p, "at most one extender may set bindVerb"));
  EXPECT_TRUE(mentions(p, "extenders[0].weight: must be > 0"));
  EXPECT_TRUE(mentions(p, "extenders[0].enableHTTPS: must be a boolean"));
  EXPECT_TRUE(mentions(p, "is managed twice"));
}

TEST(K8sConfig, ConfigMapWrapsTextVerbatim) {
  SharingConfig cfg;
  cfg.resources = {{"nvidia.com/gpu", 4}};
  std::string inner = device_plugin_config_yaml(cfg);
  YAML::Node cm = YAML::Load(configmap_yaml("gpu-sharing", "gpu-operator", "any", inner));
  EXPECT_EQ(cm["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "gpu-operator");
  YAML::Node back = YAML::Load(cm["data"]["any"].as<std::string>());
  EXPECT_TRUE(check_device_plugin_config(back).empty());
  EXPECT_EQ(back["sharing"]["timeSlicing"]["resources"][0]["replicas"].as<int>(), 4);
}

}  // namespace
}  // namespace gpupack
