// Runs the gpupack binary: `gpupack config ...` writes documents that pass
// the schema checkers and fails cleanly on bad flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <string>

#include "io/k8s_config.h"

namespace gpupack {
namespace {

namespace fs = std::filesystem;

int run(const std::string& args) {
  std::string cmd = std::string(GPUPACK_BINARY) + " " + args + " >/dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ConfigCommand, WritesCheckedDocuments) {
  fs::path dir = fs::temp_directory_path() / ("gpupack-config-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string s = (dir / "sched.yaml").string();
  std::string m = (dir / "mig.yaml").string();
  std::string t = (dir / "sharing.yaml").string();
  std::string d = (dir / "desched.yaml").string();
  ASSERT_EQ(run("config scheduler --weight 3 --managed-resource nvidia.com/gpu -o " + s), 0);
  ASSERT_EQ(run("config mig --name all-balanced --layout 1g.10gb=2,2g.20gb=1,3g.40gb=1 --device-filter 0x233010DE -o " + m), 0);
  ASSERT_EQ(run("config sharing --replicas 4 --resource nvidia.com/gpu --resource nvidia.com/mig-1g.10gb -o " + t), 0);
  ASSERT_EQ(run("config descheduler --strategy low --gpu-threshold 30 --gpu-target 70 -o " + d), 0);
  YAML::Node sched = YAML::LoadFile(s);
  EXPECT_TRUE(check_scheduler_config(sched).empty());
  EXPECT_EQ(sched["extenders"][0]["weight"].as<int>(), 3);
  EXPECT_TRUE(check_mig_parted_config(YAML::LoadFile(m)).empty());
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

}  // namespace
}  // namespace gpupack
