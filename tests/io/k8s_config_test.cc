#include "io/k8s_config.h"

#include <gtest/gtest.h>

#include <functional>
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

  YAML::Node both = YAML::Load(
      "version: v1\nsharing:\n  mps: {resources: [{name: nvidia.com/gpu, replicas: 60}]}\n"
      "  timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}\n");
  auto p = check_device_plugin_config(both);
  EXPECT_TRUE(mentions(p, "mutually exclusive"));
  EXPECT_TRUE(mentions(p, "at most 48"));
}

// The mig-parted cases live in tests/mig/mig_parted_config_test.cc.

TEST(K8sConfig, DeschedulerPolicies) {
  DeschedulerConfig low;
  const std::string low_text = descheduler_policy_yaml(low);
  YAML::Node doc = YAML::Load(low_text);
  EXPECT_TRUE(check_descheduler_policy(doc).empty()) << low_text;
  // The exact shape: top level, one profile, two plugin configs, one extension point.
  EXPECT_EQ(doc.size(), 3u);
  EXPECT_EQ(doc["apiVersion"].as<std::string>(), "descheduler/v1alpha2");
  EXPECT_EQ(doc["kind"].as<std::string>(), "DeschedulerPolicy");
  ASSERT_EQ(doc["profiles"].size(), 1u);
  const YAML::Node profile = doc["profiles"][0];
  EXPECT_EQ(profile.size(), 3u);
  EXPECT_EQ(profile["name"].as<std::string>(), "gpupack");
  ASSERT_EQ(profile["pluginConfig"].size(), 2u);
  EXPECT_EQ(profile["pluginConfig"][0]["name"].as<std::string>(), "DefaultEvictor");
  EXPECT_EQ(profile["pluginConfig"][0]["args"].size(), 1u);
  EXPECT_TRUE(profile["pluginConfig"][0]["args"]["nodeFit"].as<bool>());
  const YAML::Node lnu = profile["pluginConfig"][1];
  EXPECT_EQ(lnu["name"].as<std::string>(), "LowNodeUtilization");
  EXPECT_EQ(lnu["args"].size(), 2u);
  EXPECT_EQ(lnu["args"]["thresholds"].size(), 4u);
  EXPECT_EQ(lnu["args"]["thresholds"]["nvidia.com/gpu"].as<int>(), 20);
  EXPECT_EQ(lnu["args"]["thresholds"]["pods"].as<int>(), 20);
  EXPECT_EQ(lnu["args"]["targetThresholds"]["nvidia.com/gpu"].as<int>(), 50);
  EXPECT_EQ(profile["plugins"].size(), 1u);
  EXPECT_EQ(profile["plugins"]["balance"].size(), 1u);
  ASSERT_EQ(profile["plugins"]["balance"]["enabled"].size(), 1u);
  EXPECT_EQ(profile["plugins"]["balance"]["enabled"][0].as<std::string>(), "LowNodeUtilization");

  DeschedulerConfig high;
  high.strategy = DeschedulerConfig::Strategy::kHighNodeUtilization;
  high.thresholds = {{"cpu", 30}, {"nvidia.com/gpu", 40}};
  YAML::Node h = YAML::Load(descheduler_policy_yaml(high));
  EXPECT_TRUE(check_descheduler_policy(h).empty()) << descheduler_policy_yaml(high);
  EXPECT_EQ(h["profiles"][0]["pluginConfig"][1]["name"].as<std::string>(), "HighNodeUtilization");
  EXPECT_EQ(h["profiles"][0]["pluginConfig"][1]["args"].size(), 1u);  // thresholds only
  EXPECT_EQ(h["profiles"][0]["plugins"]["balance"]["enabled"][0].as<std::string>(), "HighNodeUtilization");

  DeschedulerConfig below = low;
  below.target_thresholds["nvidia.com/gpu"] = 10;
  EXPECT_THROW(descheduler_policy_yaml(below), std::invalid_argument);
  DeschedulerConfig nogpu;
  nogpu.thresholds.erase("nvidia.com/gpu");
  EXPECT_THROW(descheduler_policy_yaml(nogpu), std::invalid_argument);
  DeschedulerConfig extra_target = low;
  extra_target.target_thresholds["nvidia.com/gpu.shared"] = 60;
  EXPECT_THROW(descheduler_policy_yaml(extra_target), std::invalid_argument);
  DeschedulerConfig over = low;
  over.thresholds["cpu"] = 101;
  EXPECT_THROW(descheduler_policy_yaml(over), std::invalid_argument);

  // Value rules of the utilization plugins.
  YAML::Node v = YAML::Clone(doc);
  v["profiles"][0]["pluginConfig"][1]["args"]["thresholds"]["cpu"] = 120;
  v["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]["nvidia.com/gpu"] = 5;
  v["kind"] = "Policy";
  auto p = check_descheduler_policy(v);
  EXPECT_TRUE(mentions(p, "profiles[0].pluginConfig[1].args.thresholds.cpu: must be a percent"));
  EXPECT_TRUE(mentions(p, "profiles[0].pluginConfig[1].args.targetThresholds.nvidia.com/gpu: below its threshold"));
  EXPECT_TRUE(mentions(p, "kind: must be \"DeschedulerPolicy\""));
}

TEST(K8sConfig, DeschedulerCheckerFollowsTheStrictV1alpha2Schema) {
  const YAML::Node good = YAML::Load(descheduler_policy_yaml(DeschedulerConfig{}));
  auto problems_after = [&](const std::function<void(YAML::Node&)>& edit) {
    YAML::Node d = YAML::Clone(good);
    edit(d);
    return check_descheduler_policy(d);
  };
  auto args = [](YAML::Node& d) { return d["profiles"][0]["pluginConfig"][1]["args"]; };

  // Percentages are float64 upstream: fractions pass; quoted numbers do not.
  EXPECT_TRUE(problems_after([&](YAML::Node& d) { args(d)["thresholds"]["cpu"] = 12.5; }).empty());
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { args(d)["thresholds"]["cpu"] = YAML::Load("\"20\""); }),
                       "thresholds.cpu: must be a percent"));
  // Both maps name the same resources, each way.
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { args(d)["targetThresholds"].remove("memory"); }),
                       "args.targetThresholds: missing memory"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { args(d)["targetThresholds"]["ephemeral-storage"] = 50; }),
                       "args.thresholds: missing ephemeral-storage"));
  // Deviation thresholds may have targets below thresholds.
  EXPECT_TRUE(problems_after([&](YAML::Node& d) {
                args(d)["useDeviationThresholds"] = true;
                args(d)["targetThresholds"]["cpu"] = 5;
              }).empty());
  // Misspelt or unknown keys fail strict decoding, at every level.
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { args(d)["targetThreshold"] = args(d)["targetThresholds"]; }),
                       "args.targetThreshold: unknown field"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { d["strategies"] = YAML::Node(YAML::NodeType::Map); }),
                       "strategies: unknown field"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { d["profiles"][0]["pluginConfigs"] = 1; }),
                       "profiles[0].pluginConfigs: unknown field"));
  EXPECT_TRUE(
      mentions(problems_after([&](YAML::Node& d) { d["profiles"][0]["pluginConfig"][0]["args"]["nodefit"] = true; }),
               "args.nodefit: unknown field; the descheduler's strict decoding rejects it (keys are "
               "case-sensitive: \"nodeFit\")"));
  // Extension points are spelt as the v1alpha2 JSON tags; "evict" is gone.
  EXPECT_TRUE(
      mentions(problems_after([&](YAML::Node& d) {
                 d["profiles"][0]["plugins"]["preEvictionFilter"]["enabled"].push_back("DefaultEvictor");
               }),
               "plugins.preEvictionFilter: unknown field; the descheduler's strict decoding rejects it (keys are "
               "case-sensitive: \"preevictionfilter\")"));
  EXPECT_TRUE(problems_after([&](YAML::Node& d) {
                d["profiles"][0]["plugins"]["preevictionfilter"]["enabled"].push_back("DefaultEvictor");
                d["profiles"][0]["plugins"]["filter"]["enabled"].push_back("DefaultEvictor");
              }).empty());
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) {
                         d["profiles"][0]["plugins"]["evict"]["enabled"].push_back("DefaultEvictor");
                       }),
                       "profiles[0].plugins.evict: unknown field"));
  // A plugin only where it implements the extension point, and configured.
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) {
                         d["profiles"][0]["plugins"]["deschedule"]["enabled"].push_back("LowNodeUtilization");
                       }),
                       "plugins.deschedule.enabled[0]: LowNodeUtilization does not implement the deschedule extension "
                       "point"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) {
                         d["profiles"][0]["plugins"]["deschedule"]["enabled"].push_back("PodLifeTime");
                       }),
                       "plugins.deschedule.enabled[0]: PodLifeTime has no pluginConfig entry"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) {
                         d["profiles"][0]["plugins"]["balance"]["enabled"].push_back("GpuBalancer");
                       }),
                       "plugins.balance.enabled[1]: \"GpuBalancer\" is not an in-tree descheduler plugin"));
  EXPECT_TRUE(mentions(problems_after([&](YAML::Node& d) { d["profiles"][0]["pluginConfig"][0]["name"] = "Evictor"; }),
                       "pluginConfig[0].name: \"Evictor\" is not an in-tree descheduler plugin"));
  // A deschedule-only profile is valid (nothing needs to be at balance).
  EXPECT_TRUE(problems_after([&](YAML::Node& d) {
                YAML::Node pc;
                pc["name"] = "PodLifeTime";
                pc["args"]["maxPodLifeTimeSeconds"] = 86400;
                d["profiles"][0]["pluginConfig"].push_back(pc);
                d["profiles"][0]["plugins"].remove("balance");
                d["profiles"][0]["plugins"]["deschedule"]["enabled"].push_back("PodLifeTime");
              }).empty());
  // HighNodeUtilization's args have no targetThresholds; evictable
  // namespaces take exclude only.
  DeschedulerConfig high;
  high.strategy = DeschedulerConfig::Strategy::kHighNodeUtilization;
  YAML::Node h = YAML::Load(descheduler_policy_yaml(high));
  h["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]["cpu"] = 50;
  h["profiles"][0]["pluginConfig"][1]["args"]["evictableNamespaces"]["include"].push_back("ml");
  auto p = check_descheduler_policy(h);
  EXPECT_TRUE(mentions(p, "pluginConfig[1].args.targetThresholds: unknown field"));
  EXPECT_TRUE(mentions(p, "args.evictableNamespaces.include: not supported"));
  // Types and value rules of the top level and of DefaultEvictor.
  p = problems_after([&](YAML::Node& d) {
    d["maxNoOfPodsToEvictPerNode"] = -1;
    d["nodeSelector"] = YAML::Load("true");
    d["metricsProviders"].push_back(YAML::Load("{source: Graphite}"));
    d["profiles"][0]["pluginConfig"][0]["args"]["nodeFit"] = "yes please";
    d["profiles"][0]["pluginConfig"][0]["args"]["minPodAge"] = "ten minutes";
    d["profiles"][0]["pluginConfig"][0]["args"]["priorityThreshold"] = YAML::Load("{name: high, value: 100}");
    d["profiles"][0]["pluginConfig"][0]["args"]["noEvictionPolicy"] = "Sometimes";
  });
  EXPECT_TRUE(mentions(p, "maxNoOfPodsToEvictPerNode: must be an integer >= 0"));
  EXPECT_TRUE(mentions(p, "nodeSelector: must be a string"));
  EXPECT_TRUE(mentions(p, "metricsProviders[0].source: must be KubernetesMetrics or Prometheus"));
  EXPECT_TRUE(mentions(p, "pluginConfig[0].args.nodeFit: must be true or false"));
  EXPECT_TRUE(mentions(p, "pluginConfig[0].args.minPodAge: must be a duration"));
  EXPECT_TRUE(mentions(p, "pluginConfig[0].args.priorityThreshold: only one of name and value may be set"));
  EXPECT_TRUE(mentions(p, "pluginConfig[0].args.noEvictionPolicy: must be Preferred or Mandatory"));
  EXPECT_EQ(p.size(), 7u) << ::testing::PrintToString(p);
  // Every documented top-level field is accepted.
  EXPECT_TRUE(problems_after([&](YAML::Node& d) {
                d["nodeSelector"] = "pool=gpu";
                d["maxNoOfPodsToEvictPerNode"] = 5;
                d["maxNoOfPodsToEvictPerNamespace"] = 5;
                d["maxNoOfPodsToEvictTotal"] = 20;
                d["evictionFailureEventNotification"] = true;
                d["gracePeriodSeconds"] = 30;
                d["metricsProviders"].push_back(YAML::Load("{source: KubernetesMetrics}"));
              }).empty());
}

TEST(K8sConfig, SchedulerConfigurationExtenders) {
  SchedulerExtenderConfig cfg;
  cfg.managed_resources = {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"};
  cfg.node_cache_capable = true;
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
  EXPECT_EQ(doc["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  // Both choices that change what reaches gpupack come with a warning.
  const auto warnings = scheduler_config_warnings(cfg);
  EXPECT_TRUE(mentions(warnings, "pods that ask for GPUs only through gpupack.io annotations"));
  EXPECT_TRUE(mentions(warnings, "nodeCacheCapable: true"));

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

// The defaults let every pod of the profile reach gpupack: no
// managedResources (kube-scheduler would skip pods that ask for GPUs only by
// annotation) and full Node objects (no naming agreement needed).
TEST(K8sConfig, SchedulerDefaultsSendEveryPodToTheExtender) {
  const SchedulerExtenderConfig cfg;
  const YAML::Node doc = YAML::Load(scheduler_config_yaml(cfg));
  EXPECT_TRUE(check_scheduler_config(doc, cfg.kube_minor).empty());
  const YAML::Node e = doc["extenders"][0];
  EXPECT_FALSE(e["managedResources"]);
  EXPECT_FALSE(e["nodeCacheCapable"].as<bool>());
  EXPECT_TRUE(scheduler_config_warnings(cfg).empty());
}

TEST(K8sConfig, SchedulerConfigApiVersionPerRelease) {
  // The newest version each release serves (KEP-785 and the removal PRs).
  const std::map<int, std::string> want = {{20, "v1beta1"}, {21, "v1beta1"}, {22, "v1beta2"},
                                           {23, "v1beta3"}, {24, "v1beta3"}, {25, "v1"},
                                           {28, "v1"},      {29, "v1"},      {34, "v1"}};
  for (int minor = kSchedulerMinKubeMinor; minor <= kSchedulerMaxKubeMinor; ++minor) {
    SchedulerExtenderConfig cfg;
    cfg.kube_minor = minor;
    const std::string text = scheduler_config_yaml(cfg);
    const YAML::Node doc = YAML::Load(text);
    const std::string api = doc["apiVersion"].as<std::string>();
    EXPECT_TRUE(check_scheduler_config(doc, minor).empty()) << text;
    EXPECT_TRUE(scheduler_config_api_served(api, minor)) << minor << " " << api;
    if (auto it = want.find(minor); it != want.end()) {
      EXPECT_EQ(api, "kubescheduler.config.k8s.io/" + it->second) << "1." << minor;
    }
    // Same extender stanza in every version.
    EXPECT_EQ(doc["extenders"][0]["urlPrefix"].as<std::string>(), cfg.url_prefix);
    EXPECT_EQ(doc["profiles"][0]["schedulerName"].as<std::string>(), cfg.scheduler_name);
  }
  // Removed versions are refused for later releases, new ones for earlier.
  YAML::Node doc = YAML::Load(scheduler_config_yaml(SchedulerExtenderConfig{}));
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1beta3";
  EXPECT_TRUE(check_scheduler_config(doc, 28).empty());
  EXPECT_TRUE(
      mentions(check_scheduler_config(doc, 29), "Kubernetes 1.29 does not serve kubescheduler.config.k8s.io/v1beta3"));
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1";
  EXPECT_TRUE(mentions(check_scheduler_config(doc, 24), "does not serve"));
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1beta1";
  EXPECT_TRUE(mentions(check_scheduler_config(doc, 23), "does not serve"));
  EXPECT_TRUE(check_scheduler_config(doc).empty());  // no release given: any known version
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1alpha2";
  EXPECT_TRUE(mentions(check_scheduler_config(doc), "is not a KubeSchedulerConfiguration version"));
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1";
  doc["algorithmSource"]["provider"] = "DefaultProvider";
  EXPECT_TRUE(mentions(check_scheduler_config(doc), "algorithmSource: unknown top-level key"));

  // Out of range or malformed versions.
  for (int minor : {19, 35, 0}) {
    SchedulerExtenderConfig cfg;
    cfg.kube_minor = minor;
    EXPECT_THROW(scheduler_config_yaml(cfg), std::invalid_argument) << minor;
  }
  EXPECT_EQ(parse_kube_minor("1.28", 20, 34), 28);
  EXPECT_EQ(parse_kube_minor("v1.22.3", 20, 34), 22);
  for (const char* bad : {"1.19", "1.35", "2.1", "1.x", "", "128", "1.28-rc"}) {
    EXPECT_THROW(parse_kube_minor(bad, 20, 34), std::invalid_argument) << bad;
  }
  SchedulerExtenderConfig old;
  old.kube_minor = 20;
  EXPECT_TRUE(mentions(scheduler_config_warnings(old), "FailedAndUnresolvableNodes"));
}

TEST(K8sConfig, DraObjectsForEachRequestForm) {
  DraConfig cfg;
  cfg.ns = "ml";
  cfg.whole_gpus = 2;
  cfg.shared_memory_mib = 20480;
  cfg.mig_profile = "1g.10gb+me";
  cfg.mig_count = 2;
  const std::string text = dra_config_yaml(cfg);
  const auto docs = YAML::LoadAll(text);
  ASSERT_EQ(docs.size(), 5u) << text;
  std::map<std::string, YAML::Node> by_name;
  for (const auto& d : docs) {
    EXPECT_TRUE(check_dra_object(d).empty()) << YAML::Dump(d) << ::testing::PrintToString(check_dra_object(d));
    EXPECT_EQ(d["apiVersion"].as<std::string>(), "resource.k8s.io/v1");
    by_name[d["metadata"]["name"].as<std::string>()] = d;
  }
  const YAML::Node gpu_class = by_name["gpu.nvidia.com"];
  EXPECT_EQ(gpu_class["kind"].as<std::string>(), "DeviceClass");
  EXPECT_NE(gpu_class["spec"]["selectors"][0]["cel"]["expression"].as<std::string>().find(".type == 'gpu'"),
            std::string::npos);
  EXPECT_NE(
      by_name["mig.nvidia.com"]["spec"]["selectors"][0]["cel"]["expression"].as<std::string>().find(".type == 'mig'"),
      std::string::npos);
  const YAML::Node whole = by_name["gpupack-whole-gpu"];
  EXPECT_EQ(whole["kind"].as<std::string>(), "ResourceClaimTemplate");
  EXPECT_EQ(whole["metadata"]["namespace"].as<std::string>(), "ml");
  EXPECT_EQ(whole["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"].as<int>(), 2);
  EXPECT_EQ(whole["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"].as<std::string>(),
            "gpu.nvidia.com");
  // A shared fraction is one claim that several pods name.
  const YAML::Node shared = by_name["gpupack-shared-gpu"];
  EXPECT_EQ(shared["kind"].as<std::string>(), "ResourceClaim");
  EXPECT_NE(
      shared["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"].as<std::string>().find(
          "quantity('20480Mi')"),
      std::string::npos);
  const YAML::Node mig = by_name["gpupack-mig-1g.10gb.me"];
  ASSERT_TRUE(mig) << text;
  EXPECT_EQ(mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"].as<std::string>(),
            "mig.nvidia.com");
  EXPECT_NE(mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
                .as<std::string>()
                .find("profile == '1g.10gb+me'"),
            std::string::npos);

  // The checker refuses what the API server would.
  YAML::Node d = YAML::Clone(whole);
  YAML::Node ex = d["spec"]["spec"]["devices"]["requests"][0]["exactly"];
  ex["allocationMode"] = "All";
  d["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"].push_back(YAML::Load("{name: a, deviceClassName: x}"));
  d["spec"]["spec"]["devices"]["constraints"].push_back(YAML::Load("{requests: [nope], matchAttribute: x}"));
  d["spec"]["spec"]["devices"]["requests"][0]["name"] = "Bad_Name";
  d["apiVersion"] = "resource.k8s.io/v1beta1";
  auto p = check_dra_object(d);
  EXPECT_TRUE(mentions(p, "count: must not be set with allocationMode All"));
  EXPECT_TRUE(mentions(p, "needs exactly one of exactly and firstAvailable"));
  EXPECT_TRUE(mentions(p, "names a request the claim lacks"));
  EXPECT_TRUE(mentions(p, "requests[0].name: must be a DNS label"));
  EXPECT_TRUE(mentions(p, "apiVersion: must be \"resource.k8s.io/v1\""));
  YAML::Node dc = YAML::Clone(gpu_class);
  dc["metadata"]["namespace"] = "ml";
  dc["spec"]["selector"] = 1;
  p = check_dra_object(dc);
  EXPECT_TRUE(mentions(p, "a DeviceClass is cluster-scoped"));
  EXPECT_TRUE(mentions(p, "spec.selector: unknown field"));

  DraConfig bad = cfg;
  bad.kube_minor = 33;
  EXPECT_THROW(dra_config_yaml(bad), std::invalid_argument);
  bad = cfg;
  bad.mig_profile = "big";
  EXPECT_THROW(dra_config_yaml(bad), std::invalid_argument);
  bad = cfg;
  bad.mig_count = 8;
  EXPECT_THROW(dra_config_yaml(bad), std::invalid_argument);
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
