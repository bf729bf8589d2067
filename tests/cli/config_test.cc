// Runs the gpupack binary: `gpupack config ...` writes documents that pass
// the schema checkers and fails cleanly on bad flags.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "io/k8s_config.h"
#include "mig/mig_parted_config.h"

#include <fstream>
#include <sstream>

namespace gpupack {
namespace {

namespace fs = std::filesystem;

int run(const std::string& args, const std::string& stderr_path = "/dev/null") {
  std::string cmd = std::string(GPUPACK_BINARY) + " " + args + " >/dev/null 2>" + stderr_path;
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ConfigCommand, WritesCheckedDocuments) {
  fs::path dir = fs::temp_directory_path() / ("gpupack-config-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string s = (dir / "sched.yaml").string();
  std::string m = (dir / "mig.yaml").string();
  std::string t = (dir / "sharing.yaml").string();
  std::string d = (dir / "desched.yaml").string();
  ASSERT_EQ(run("config scheduler --weight 3 --managed-resource nvidia.com/gpu -o " + s), 0);
  ASSERT_EQ(
      run("config mig --name all-balanced --layout 1g.10gb=2,2g.20gb=1,3g.40gb=1 --device-filter 0x233010DE -o " + m),
      0);
  ASSERT_EQ(run("config sharing --replicas 4 --resource nvidia.com/gpu --resource nvidia.com/mig-1g.10gb -o " + t), 0);
  ASSERT_EQ(run("config descheduler --strategy low --gpu-threshold 30 --gpu-target 70 -o " + d), 0);
  YAML::Node sched = YAML::LoadFile(s);
  EXPECT_TRUE(check_scheduler_config(sched, kSchedulerMaxKubeMinor).empty());
  EXPECT_EQ(sched["extenders"][0]["weight"].as<int>(), 3);
  EXPECT_TRUE(validate_mig_parted_config(slurp(m)).empty()) << slurp(m);
  EXPECT_TRUE(check_device_plugin_config(YAML::LoadFile(t)).empty());
  YAML::Node ds = YAML::LoadFile(d);
  EXPECT_TRUE(check_descheduler_policy(ds).empty());
  EXPECT_EQ(ds["profiles"][0]["pluginConfig"][1]["args"]["targetThresholds"]["nvidia.com/gpu"].as<int>(), 70);

  // Bad values: exit 1 and no file written.
  std::string bad = (dir / "bad.yaml").string();
  EXPECT_EQ(run("config scheduler --weight 0 -o " + bad), 1);
  EXPECT_EQ(run("config mig --layout 1g.10gb -o " + bad), 1);
  EXPECT_EQ(run("config sharing --mode mps --resource nvidia.com/mig-1g.10gb -o " + bad), 1);
  EXPECT_EQ(run("config descheduler --gpu-threshold 80 --gpu-target 50 -o " + bad), 1);
  EXPECT_FALSE(fs::exists(bad));
  fs::remove_all(dir);
}

// `config mig` refuses layouts no GPU (or not the given model) can hold, and
// enables MIG on the layouts it writes.
TEST(ConfigCommand, MigLayoutsAreCheckedAgainstTheGeometry) {
  fs::path dir = fs::temp_directory_path() / ("gpupack-config-mig-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "mig.yaml").string();
  const std::string err = (dir / "err.txt").string();
  const std::string bad = (dir / "bad.yaml").string();

  EXPECT_EQ(run("config mig --layout 7g.80gb=3 -o " + bad, err), 1);
  EXPECT_NE(slurp(err).find("--layout \"7g.80gb=3\": the profiles take 21 compute slices"), std::string::npos)
      << slurp(err);
  EXPECT_EQ(run("config mig --layout 1g.10gb=8 -o " + bad, err), 1);
  EXPECT_EQ(run("config mig --gpu-model A100-80GB --layout 3g.40gb=2,1g.10gb=1 -o " + bad, err), 1);
  EXPECT_NE(slurp(err).find("does not fit one A100-80GB"), std::string::npos) << slurp(err);
  EXPECT_EQ(run("config mig --gpu-model A100-80GB --layout 1g.18gb=1 -o " + bad, err), 1);
  EXPECT_NE(slurp(err).find("'1g.18gb' is not a A100-80GB profile"), std::string::npos) << slurp(err);
  EXPECT_EQ(run("config mig --gpu-model T4 --layout 1g.10gb=1 -o " + bad, err), 1);
  EXPECT_NE(slurp(err).find("--gpu-model \"T4\": unknown or not MIG-capable"), std::string::npos) << slurp(err);
  EXPECT_EQ(run("config mig --name all-disabled --layout 1g.10gb=1 -o " + bad, err), 1);
  EXPECT_FALSE(fs::exists(bad));

  // Without a model: the shared limits only, so this fits "some" GPU.
  ASSERT_EQ(run("config mig --name mine --layout 3g.40gb=2,1g.10gb=1 -o " + out), 0);
  // With the model: the layout and the model's PCI ids as device-filter.
  ASSERT_EQ(run("config mig --name mine --gpu-model A100-80GB --layout 1g.10gb=2,2g.20gb=1,3g.40gb=1 "
                "--layout disabled -o " +
                out),
            0);
  const std::string text = slurp(out);
  EXPECT_TRUE(validate_mig_parted_config(text).empty()) << text;
  const MigPartedConfig cfg = parse_mig_parted_config(text);
  ASSERT_EQ(cfg.configs.at("mine").size(), 2u);
  const MigPartedEntry& on = cfg.configs.at("mine")[0];
  EXPECT_TRUE(on.mig_enabled);  // the entry's own default is false
  EXPECT_EQ(on.mig_devices, (MigProfileCounts{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_FALSE(on.device_filter.empty());
  EXPECT_TRUE(on.selects(0, on.device_filter));
  EXPECT_FALSE(cfg.configs.at("mine")[1].mig_enabled);
  EXPECT_FALSE(cfg.configs.at("all-disabled")[0].mig_enabled);
  fs::remove_all(dir);
}

TEST(ConfigCommand, SchedulerForEachKubernetesRelease) {
  fs::path dir = fs::temp_directory_path() / ("gpupack-config-sched-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "s.yaml").string();
  const std::string err = (dir / "err.txt").string();
  for (const auto& [version, api] : std::vector<std::pair<std::string, std::string>>{
           {"1.20", "v1beta1"}, {"1.22", "v1beta2"}, {"1.24", "v1beta3"}, {"v1.29.4", "v1"}, {"1.34", "v1"}}) {
    ASSERT_EQ(run("config scheduler --kube-version " + version + " -o " + out, err), 0) << version << slurp(err);
    const YAML::Node doc = YAML::LoadFile(out);
    const int minor = parse_kube_minor(version, kSchedulerMinKubeMinor, kSchedulerMaxKubeMinor);
    EXPECT_TRUE(check_scheduler_config(doc, minor).empty()) << version;
    EXPECT_EQ(doc["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/" + api) << version;
    EXPECT_FALSE(doc["extenders"][0]["managedResources"]) << version;
    EXPECT_FALSE(doc["extenders"][0]["nodeCacheCapable"].as<bool>()) << version;
  }
  // Explicit choices are written, each with a warning on stderr.
  ASSERT_EQ(run("config scheduler --managed-resource nvidia.com/gpu --node-cache-capable -o " + out, err), 0);
  const YAML::Node doc = YAML::LoadFile(out);
  EXPECT_EQ(doc["extenders"][0]["managedResources"][0]["name"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_TRUE(doc["extenders"][0]["nodeCacheCapable"].as<bool>());
  EXPECT_NE(slurp(err).find("warning: managedResources (nvidia.com/gpu)"), std::string::npos) << slurp(err);
  EXPECT_NE(slurp(err).find("warning: nodeCacheCapable: true"), std::string::npos) << slurp(err);
  // Out of range: a clear error, no file.
  const std::string bad = (dir / "bad.yaml").string();
  for (const char* v : {"1.19", "1.35", "one"}) {
    EXPECT_EQ(run(std::string("config scheduler --kube-version ") + v + " -o " + bad, err), 1) << v;
    EXPECT_NE(slurp(err).find("Kubernetes version"), std::string::npos) << slurp(err);
  }
  EXPECT_FALSE(fs::exists(bad));
  fs::remove_all(dir);
}

TEST(ConfigCommand, DraObjectsPassTheChecker) {
  fs::path dir = fs::temp_directory_path() / ("gpupack-config-dra-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "dra.yaml").string();
  ASSERT_EQ(run("config dra --namespace ml --gpus 4 --mig-profile 3g.40gb -o " + out), 0);
  const auto docs = YAML::LoadAllFromFile(out);
  ASSERT_EQ(docs.size(), 5u);
  std::set<std::string> kinds;
  for (const auto& d : docs) {
    EXPECT_TRUE(check_dra_object(d).empty()) << YAML::Dump(d);
    kinds.insert(d["kind"].as<std::string>());
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}));
  EXPECT_EQ(run("config dra --kube-version 1.33 -o " + (dir / "bad.yaml").string()), 1);
  EXPECT_EQ(run("config dra --mig-profile 3g40gb -o " + (dir / "bad.yaml").string()), 1);
  EXPECT_FALSE(fs::exists(dir / "bad.yaml"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpupack
