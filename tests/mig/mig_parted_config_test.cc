#include "mig/mig_parted_config.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

bool has_error(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

TEST(MigPartedConfig, AcceptsTheDocumentedShapes) {
  const std::string yaml = R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}
  all-balanced:
    - device-filter: ["0x20B010DE", "0x20F110DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: true
      mig-devices:
        1g.6gb: 2
        2g.12gb: 1
  split-node:
    - devices: [0, 1]
      mig-enabled: false
    - devices: [2]
      mig-enabled: true
      mig-devices: {"3g.20gb": 2}
  with-me-and-ci:
    - devices: [3]
      mig-enabled: true
      mig-devices: {"1g.5gb+me": 1, "1c.3g.20gb": 2, "1g.10gb+me.all": 0}
)";
  EXPECT_TRUE(validate_mig_parted_config(yaml).empty()) << join(validate_mig_parted_config(yaml));
  const auto cfg = parse_mig_parted_config(yaml);
  ASSERT_EQ(cfg.configs.size(), 5u);
  const auto& balanced = cfg.configs.at("all-balanced");
  ASSERT_EQ(balanced.size(), 2u);
  EXPECT_EQ(balanced[0].device_filter, (std::vector<std::string>{"0x20B010DE", "0x20F110DE"}));
  EXPECT_FALSE(balanced[0].devices.has_value());
  EXPECT_EQ(balanced[0].mig_devices, (MigProfileCounts{{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}));
  EXPECT_TRUE(balanced[0].selects(5, {"0x20B010DE"}));
  EXPECT_FALSE(balanced[0].selects(5, {"0x20B710DE"}));
  const auto& split = cfg.configs.at("split-node");
  EXPECT_EQ(split[0].devices, (std::vector<int>{0, 1}));
  EXPECT_FALSE(split[0].mig_enabled);
  EXPECT_TRUE(split[1].selects(2, {}));
  EXPECT_FALSE(split[1].selects(0, {}));
}

TEST(MigPartedConfig, RefusesSchemaViolationsNamingThePlace) {
  struct Case {
    std::string yaml;
    std::string error_part;
  };
  const std::string ok_entry = "    - devices: all\n      mig-enabled: false\n";
  const std::vector<Case> bad = {
      {"version: v2\nmig-configs:\n  c:\n" + ok_entry, "only v1"},
      {"mig-configs:\n  c:\n" + ok_entry, "missing required key 'version'"},
      {"version: v1\n", "missing required key 'mig-configs'"},
      {"version: v1\nmig-configs: {}\n", "at least one named config"},
      {"version: v1\nmig-configs:\n  c: []\n", "mig-configs.c (line 3): must be a list of at least one entry"},
      {"version: v1\nextra: 1\nmig-configs:\n  c:\n" + ok_entry, "unknown top-level key"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: some\n      mig-enabled: false\n",
       "mig-configs.c[0].devices (line 4): 'some' is neither \"all\""},
      {"version: v1\nmig-configs:\n  c:\n    - devices: [0, -1]\n      mig-enabled: false\n",
       "'-1' is not a GPU index"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: [0, 0]\n      mig-enabled: false\n", "listed twice"},
      {"version: v1\nmig-configs:\n  c:\n    - mig-enabled: false\n", "missing required key 'devices'"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n", "missing required key 'mig-enabled'"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: maybe\n", "'maybe' is not a boolean"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n",
       "missing 'mig-devices'"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.5gb\": 1}\n",
       "must be empty when mig-enabled is false"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gib\": 1}\n",
       "'1g.5gib' is not a MIG profile name"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": -2}\n",
       "count '-2' is not a non-negative integer"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: [1g.5gb]\n",
       "must be a map of profile to count"},
      {"version: v1\nmig-configs:\n  c:\n    - device-filter: \"20B0\"\n      devices: all\n      mig-enabled: false\n",
       "'20B0' is not a PCI device id"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n      gpus: 3\n",
       "unknown key 'gpus'"},
      {"version: v1\nmig-configs:\n  c:\n    - [1, 2]\n", "an entry must be a map"},
      {"- just\n- a list\n", "top level must be a map"},
      {"version: v1\nmig-configs: {c: [\n", "not valid YAML"},
  };
  for (const auto& c : bad) {
    const auto errors = validate_mig_parted_config(c.yaml);
    EXPECT_TRUE(has_error(errors, c.error_part)) << "document:\n" << c.yaml << "errors:\n" << join(errors)
                                                 << "wanted: " << c.error_part;
    EXPECT_THROW(parse_mig_parted_config(c.yaml), std::invalid_argument) << c.yaml;
  }
}

TEST(MigPartedConfig, EmittedYamlParsesBackToTheSameValue) {
  MigPartedConfig cfg;
  MigPartedEntry off;
  off.devices = std::vector<int>{0, 1};
  off.mig_enabled = false;
  MigPartedEntry on;
  on.devices = std::vector<int>{2};
  on.mig_enabled = true;
  on.mig_devices = {{"1g.5gb+me", 1}, {"3g.20gb", 1}, {"2g.10gb", 1}};
  MigPartedEntry filtered;
  filtered.device_filter = {"0x20B710DE"};
  filtered.mig_enabled = true;  // devices: all, mig-devices: {}
  cfg.configs["node-a"] = {off, on};
  cfg.configs["a30"] = {filtered};
  const std::string yaml = to_yaml(cfg);
  EXPECT_TRUE(validate_mig_parted_config(yaml).empty()) << yaml << join(validate_mig_parted_config(yaml));
  EXPECT_EQ(parse_mig_parted_config(yaml), cfg) << yaml;
  EXPECT_NE(yaml.find("version: v1"), std::string::npos);
  EXPECT_NE(yaml.find("mig-configs:"), std::string::npos);
}

TEST(MigPartedConfig, ProfileFormat) {
  for (const char* ok : {"1g.5gb", "7g.141gb", "1c.3g.20gb", "1g.5gb+me", "1g.10gb+me.all", "1g.5gb-me", "1g.24gb+gfx"}) {
    EXPECT_TRUE(valid_mig_profile_format(ok)) << ok;
  }
  for (const char* bad : {"", "1g", "g.5gb", "1g.5GiB", "1g.5gb+foo", "mig-1g.5gb", "1c.1c.1g.5gb"}) {
    EXPECT_FALSE(valid_mig_profile_format(bad)) << bad;
  }
}

}  // namespace
}  // namespace gpupack
