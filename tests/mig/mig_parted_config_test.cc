#include "mig/mig_parted_config.h"

// Both headers in one translation unit: a second definition of the schema's
// types in io/ would not compile here.
#include "io/k8s_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <type_traits>

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
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n", "missing 'mig-devices'"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.5gb\": "
       "1}\n",
       "must be empty when mig-enabled is false"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gib\": "
       "1}\n",
       "'1g.5gib' is not a MIG profile name"},
      {"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": "
       "-2}\n",
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
    EXPECT_TRUE(has_error(errors, c.error_part)) << "document:\n"
                                                 << c.yaml << "errors:\n"
                                                 << join(errors) << "wanted: " << c.error_part;
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
  for (const char* ok : {"1g.5gb", "7g.141gb", "1c.3g.20gb", "1g.5gb+me", "1g.10gb+me.all", "1g.5gb-me", "1g.24gb+gfx",
                         "1c.2g.20gb+me"}) {
    EXPECT_TRUE(valid_mig_profile_format(ok)) << ok;
  }
  for (const char* bad : {"", "1g", "g.5gb", "1g.5GiB", "1g.5gb+foo", "mig-1g.5gb", "1c.1c.1g.5gb", "2g20gb", "0g.5gb",
                          "01g.5gb", "1g.05gb", "0c.1g.5gb"}) {
    EXPECT_FALSE(valid_mig_profile_format(bad)) << bad;
  }
}

TEST(MigPartedConfig, ProfileCountsFromText) {
  EXPECT_EQ(parse_profile_counts("1g.10gb=2,2g.20gb=1,3g.40gb=1"),
            (MigProfileCounts{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_EQ(parse_profile_counts("1g.5gb+me=1"), (MigProfileCounts{{"1g.5gb+me", 1}}));
  for (const char* bad :
       {"", "1g.10gb", "1g.10gb=2,1g.10gb=1", "big=1", "1g.10gb=x", "1g.10gb=100", "1g.10gb=2,", "=2"}) {
    EXPECT_THROW(parse_profile_counts(bad), std::invalid_argument) << bad;
  }
}

// The writer refuses what it cannot write faithfully, and what it writes
// passes the validator (formerly io/'s mig_parted_config_yaml cases).
TEST(MigPartedConfig, WriterOutputChecksAndReadsBack) {
  MigPartedConfig cfg;
  MigPartedEntry off;
  cfg.configs["all-disabled"] = {off};
  MigPartedEntry balanced;
  balanced.device_filter = {"0x233010DE"};
  balanced.mig_enabled = true;
  balanced.mig_devices = parse_profile_counts("1g.10gb=2,2g.20gb=1,3g.40gb=1");
  cfg.configs["all-balanced"] = {balanced};
  MigPartedEntry split0;
  split0.devices = std::vector<int>{0, 1};
  MigPartedEntry split1;
  split1.devices = std::vector<int>{2};
  split1.mig_enabled = true;
  split1.mig_devices = {{"3g.40gb", 2}};
  cfg.configs["split"] = {split0, split1};
  const std::string text = to_yaml(cfg);
  EXPECT_TRUE(validate_mig_parted_config(text).empty()) << text << join(validate_mig_parted_config(text));
  EXPECT_EQ(parse_mig_parted_config(text), cfg);
  YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["mig-configs"]["all-disabled"][0]["devices"].as<std::string>(), "all");
  EXPECT_FALSE(doc["mig-configs"]["all-disabled"][0]["mig-enabled"].as<bool>());
  EXPECT_FALSE(doc["mig-configs"]["all-disabled"][0]["mig-devices"]);
  EXPECT_EQ(doc["mig-configs"]["all-balanced"][0]["mig-devices"]["1g.10gb"].as<int>(), 2);
  EXPECT_EQ(doc["mig-configs"]["all-balanced"][0]["device-filter"][0].as<std::string>(), "0x233010DE");
  EXPECT_EQ(doc["mig-configs"]["all-balanced"][0]["device-filter"][0].Tag(), "!");  // quoted
  EXPECT_EQ(doc["mig-configs"]["split"][1]["devices"][0].as<int>(), 2);

  // The parsed-document entry point applies the same rules.
  EXPECT_TRUE(validate_mig_parted_config(doc).empty());
  doc["mig-configs"]["split"][0]["mig-devices"]["1g.10gb"] = 1;  // disabled GPU with devices
  doc["mig-configs"]["split"][1]["devices"] = "some";
  doc["extra"] = 1;
  const auto p = validate_mig_parted_config(doc);
  EXPECT_TRUE(has_error(p, "mig-configs.split[0].mig-devices: must be empty when mig-enabled is false")) << join(p);
  EXPECT_TRUE(has_error(p, "mig-configs.split[1].devices")) << join(p);
  EXPECT_TRUE(has_error(p, "'some' is neither \"all\" nor a list of GPU indices")) << join(p);
  EXPECT_TRUE(has_error(p, "extra: unknown top-level key")) << join(p);

  // Values the writer refuses, naming the config and field.
  auto refuses = [](const MigPartedConfig& c, const std::string& part) {
    try {
      to_yaml(c);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted; wanted an error with: " << part;
  };
  MigPartedEntry bad_off;
  bad_off.mig_devices = {{"1g.10gb", 1}};
  refuses({{{"x", {bad_off}}}}, "mig-configs.x[0].mig-devices: must be empty when mig-enabled is false");
  refuses({}, "at least one named config");
  refuses({{{"x", {}}}}, "mig-configs.x: must be a list of at least one entry");
  MigPartedEntry bad_profile = split1;
  bad_profile.mig_devices = {{"big", 1}};
  refuses({{{"x", {bad_profile}}}}, "'big' is not a MIG profile name");
  MigPartedEntry negative = split1;
  negative.mig_devices = {{"1g.10gb", -1}};
  refuses({{{"x", {negative}}}}, "count '-1' is not a non-negative integer");
  MigPartedEntry too_big = split1;
  too_big.mig_devices = {{"7g.80gb", 3}};
  refuses({{{"x", {too_big}}}}, "compute slices");
  MigPartedEntry bad_filter = balanced;
  bad_filter.device_filter = {"A100"};
  refuses({{{"x", {bad_filter}}}}, "'A100' is not a PCI device id");
  MigPartedEntry no_devices = split1;
  no_devices.devices = std::vector<int>{};
  refuses({{{"x", {no_devices}}}}, "the list of GPU indices is empty");
}

// Rules that came from the two former validators, now one: each case is a
// valid document with one thing changed.
TEST(MigPartedConfig, StrictestRulesOfBothFormerValidators) {
  auto doc = [](const std::string& entry) { return "version: v1\nmig-configs:\n  c:\n" + entry; };
  const std::vector<std::pair<std::string, std::string>> bad = {
      // A plain 0x... is an integer to a YAML 1.1 loader.
      {doc("    - device-filter: [0x233010DE]\n      devices: all\n      mig-enabled: false\n"), "must be quoted"},
      {doc("    - device-filter: 0x233010DE\n      devices: all\n      mig-enabled: false\n"), "must be quoted"},
      // Counts and indices are numbers, booleans are true/false.
      {doc("    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": \"2\"}\n"),
       "count '2' is not a non-negative integer"},
      {doc("    - devices: [\"0\"]\n      mig-enabled: false\n"), "'0' is not a GPU index"},
      {doc("    - devices: all\n      mig-enabled: \"true\"\n      mig-devices: {}\n"), "'true' is not a boolean"},
      {doc("    - devices: all\n      mig-enabled: yes\n      mig-devices: {}\n"), "'yes' is not a boolean"},
      // No GPU holds more than 7 instances or 7 compute slices.
      {doc("    - devices: all\n      mig-enabled: true\n      mig-devices: {\"7g.80gb\": 3}\n"),
       "mig-configs.c[0].mig-devices (line 6): the profiles take 21 compute slices of one GPU; a GPU has at most 7"},
      {doc("    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 8}\n"),
       "8 x 1g.10gb: a GPU holds at most 7 MIG instances"},
      {doc("    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 4, \"1g.10gb+me\": 4}\n"),
       "8 instances on one GPU"},
      {doc("    - devices: all\n      mig-enabled: true\n      mig-devices: {\"01g.10gb\": 1}\n"),
       "'01g.10gb' is not a MIG profile name"},
  };
  for (const auto& [yaml, part] : bad) {
    const auto errors = validate_mig_parted_config(yaml);
    EXPECT_TRUE(has_error(errors, part)) << yaml << join(errors) << "wanted: " << part;
  }
  // At the limits, and compute-instance profiles count their C slices.
  for (const char* ok : {"{\"7g.80gb\": 1}", "{\"1g.10gb\": 7}", "{\"3g.40gb\": 1, \"4g.40gb\": 1}",
                         "{\"1c.3g.40gb\": 3}", "{\"1g.10gb\": 0, \"7g.80gb\": 1}"}) {
    const std::string yaml =
        doc(std::string("    - devices: all\n      mig-enabled: true\n      mig-devices: ") + ok + "\n");
    EXPECT_TRUE(validate_mig_parted_config(yaml).empty()) << yaml << join(validate_mig_parted_config(yaml));
  }
}

TEST(MigPartedConfig, MigDevicesAgainstAModel) {
  const MigGeometry* a100 = mig_geometry("A100-80GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(check_mig_devices({{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}, a100), "");
  EXPECT_EQ(check_mig_devices({{"7g.80gb", 1}}, a100), "");
  EXPECT_EQ(check_mig_devices({{"1g.10gb", 7}}, a100), "");
  // Fits the shared limits (7 compute slices, 3 instances) but not the
  // A100's memory slices: two 3g.40gb take all eight.
  const MigProfileCounts tight = {{"3g.40gb", 2}, {"1g.10gb", 1}};
  EXPECT_EQ(check_mig_devices(tight), "");
  EXPECT_NE(check_mig_devices(tight, a100).find("does not fit one A100-80GB"), std::string::npos)
      << check_mig_devices(tight, a100);
  // Another model's profile.
  EXPECT_NE(check_mig_devices({{"1g.18gb", 1}}, a100).find("'1g.18gb' is not a A100-80GB profile"), std::string::npos);
  EXPECT_NE(check_mig_devices({{"7g.80gb", 2}}, a100).find("14 compute slices"), std::string::npos);
  EXPECT_NE(check_mig_devices({{"1g.10gb", -1}}).find("negative"), std::string::npos);
}

// One definition of the schema: io/ and mig/ name the same types, and no
// file under src/ defines them (or a second writer or validator) again.
TEST(MigPartedConfig, OneDefinitionOfTheSchema) {
  static_assert(std::is_same_v<decltype(MigPartedConfig{}.configs)::mapped_type::value_type, MigPartedEntry>);
  EXPECT_FALSE(MigPartedEntry{}.mig_enabled);  // the single default
  namespace fs = std::filesystem;
  const fs::path src = fs::path(GPUPACK_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  const std::vector<std::pair<std::string, std::regex>> patterns = {
      {"struct MigPartedEntry", std::regex(R"(\bstruct\s+MigPartedEntry\s*\{)")},
      {"MigPartedConfig definition", std::regex(R"(\b(struct\s+MigPartedConfig\s*\{|using\s+MigPartedConfig\s*=))")},
      {"parse_profile_counts definition", std::regex(R"(\bparse_profile_counts\s*\(\s*std::string_view)")},
  };
  std::map<std::string, std::vector<std::string>> found;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".h" && ext != ".cc") continue;
    ++files;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (const auto& [name, re] : patterns) {
      const auto n = std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
      for (long i = 0; i < n; ++i) found[name].push_back(fs::relative(e.path(), src).string());
    }
    // The former second writer and checker must not come back.
    for (const char* gone : {"mig_parted_config_yaml(", "check_mig_parted_config(", "valid_mig_profile_name("}) {
      EXPECT_EQ(text.find(gone), std::string::npos) << e.path() << " has " << gone;
    }
  }
  EXPECT_GT(files, 50);
  EXPECT_EQ(found["struct MigPartedEntry"], (std::vector<std::string>{"mig/mig_parted_config.h"}));
  EXPECT_EQ(found["MigPartedConfig definition"], (std::vector<std::string>{"mig/mig_parted_config.h"}));
  // Declared in the header, defined in the source.
  EXPECT_EQ(found["parse_profile_counts definition"].size(), 2u);
}

}  // namespace
}  // namespace gpupack
