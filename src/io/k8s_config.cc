#include "io/k8s_config.h"

#include <fmt/format.h>

#include <regex>
#include <set>
#include <stdexcept>

namespace gpupack {
namespace {

constexpr int kMaxMpsReplicas = 48;  // compute capability >= 7.5

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

[[noreturn]] void bad(std::string_view field, std::string_view what) {
  throw std::invalid_argument(fmt::format("{}: {}", field, what));
}

// yaml-cpp tags plain scalars "?" and quoted ones "!".
bool is_plain(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

bool as_bool(const YAML::Node& n, bool& out) {
  if (!is_plain(n)) return false;
  const std::string& s = n.Scalar();
  if (s == "true") out = true;
  else if (s == "false") out = false;
  else return false;
  return true;
}

bool as_int(const YAML::Node& n, int64_t& out) {
  if (!is_plain(n)) return false;
  const std::string& s = n.Scalar();
  if (s.empty() || s.size() > 18) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = s[0] == '-' ? -v : v;
  return true;
}

bool is_string(const YAML::Node& n) { return n.IsScalar(); }

struct Checker {
  std::vector<std::string> problems;
  void add(const std::string& path, std::string_view what) { problems.push_back(fmt::format("{}: {}", path, what)); }

  // Required/optional key helpers; return a null node when missing or wrong.
  YAML::Node need(const YAML::Node& map, const std::string& key, const std::string& path) {
    if (!map.IsMap()) return YAML::Node();
    YAML::Node v = map[key];
    if (!v) add(path.empty() ? key : path + "." + key, "missing");
    return v;
  }
  void scalar_equals(const YAML::Node& map, const std::string& key, const std::string& path, std::string_view want) {
    YAML::Node v = need(map, key, path);
    if (v && (!v.IsScalar() || v.Scalar() != want)) add(join(path, key), fmt::format("must be \"{}\"", want));
  }
  void optional_bool(const YAML::Node& map, const std::string& key, const std::string& path) {
    if (!map.IsMap() || !map[key]) return;
    bool b;
    if (!as_bool(map[key], b)) add(join(path, key), "must be a boolean");
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
};

bool valid_resource_name(std::string_view name) {
  // Extended resources: "<domain>/<name>", domain not kubernetes.io.
  static const std::regex re(R"(^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$)");
  std::string s(name);
  if (!std::regex_match(s, re)) return false;
  std::string domain = s.substr(0, s.find('/'));
  return domain != "kubernetes.io" && (domain.size() < 14 || domain.substr(domain.size() - 14) != ".kubernetes.io");
}

bool valid_duration(std::string_view d) {
  static const std::regex re(R"(^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$)");
  return std::regex_match(std::string(d), re);
}

void check_sharing_block(Checker& c, const YAML::Node& block, const std::string& path, bool mps) {
  if (!block.IsMap()) {
    c.add(path, "must be a map");
    return;
  }
  c.optional_bool(block, "renameByDefault", path);
  c.optional_bool(block, "failRequestsGreaterThanOne", path);
  YAML::Node res = c.need(block, "resources", path);
  if (!res) return;
  if (!res.IsSequence() || res.size() == 0) {
    c.add(path + ".resources", "must be a non-empty list");
    return;
  }
  for (size_t i = 0; i < res.size(); ++i) {
    std::string rp = fmt::format("{}.resources[{}]", path, i);
    YAML::Node name = c.need(res[i], "name", rp);
    YAML::Node replicas = c.need(res[i], "replicas", rp);
    if (!res[i].IsMap()) {
      c.add(rp, "must be a map");
      continue;
    }
    if (name && (!is_string(name) || !valid_resource_name(name.Scalar()))) c.add(rp + ".name", "must be a resource name");
    int64_t r = 0;
    if (replicas && !as_int(replicas, r)) {
      c.add(rp + ".replicas", "must be an integer");
    } else if (replicas && r < 2) {
      c.add(rp + ".replicas", fmt::format("must be >= 2, got {}", r));
    } else if (replicas && mps && r > kMaxMpsReplicas) {
      c.add(rp + ".replicas", fmt::format("MPS allows at most {} clients, got {}", kMaxMpsReplicas, r));
    }
    if (mps && name && name.IsScalar() && name.Scalar() != "nvidia.com/gpu") {
      c.add(rp + ".name", "MPS shares only nvidia.com/gpu");
    }
    if (res[i]["devices"]) {
      const YAML::Node& d = res[i]["devices"];
      if (!(d.IsScalar() && d.Scalar() == "all")) c.add(rp + ".devices", "only \"all\" is honoured");
    }
  }
}

}  // namespace

// --- device plugin sharing --------------------------------------------------

std::string device_plugin_config_yaml(const SharingConfig& cfg) {
  bool mps = cfg.mode == SharingConfig::Mode::kMps;
  if (cfg.resources.empty()) bad("sharing.resources", "at least one resource is required");
  if (cfg.mig_strategy != "none" && cfg.mig_strategy != "single" && cfg.mig_strategy != "mixed") {
    bad("flags.migStrategy", fmt::format("\"{}\" is not none, single or mixed", cfg.mig_strategy));
  }
  YAML::Node resources(YAML::NodeType::Sequence);
  for (const auto& r : cfg.resources) {
    if (!valid_resource_name(r.name)) bad("resources.name", fmt::format("\"{}\" is not a resource name", r.name));
    if (r.replicas < 2) bad("resources.replicas", fmt::format("{} must be >= 2", r.replicas));
    if (mps && r.name != "nvidia.com/gpu") bad("resources.name", fmt::format("MPS shares only nvidia.com/gpu, not \"{}\"", r.name));
    if (mps && r.replicas > kMaxMpsReplicas) {
      bad("resources.replicas", fmt::format("MPS allows at most {} clients, got {}", kMaxMpsReplicas, r.replicas));
    }
    YAML::Node n;
    n["name"] = r.name;
    n["replicas"] = r.replicas;
    resources.push_back(n);
  }
  YAML::Node block;
  block["renameByDefault"] = cfg.rename_by_default;
  if (cfg.fail_requests_greater_than_one) block["failRequestsGreaterThanOne"] = *cfg.fail_requests_greater_than_one;
  block["resources"] = resources;
  YAML::Node doc;
  doc["version"] = "v1";
  doc["flags"]["migStrategy"] = cfg.mig_strategy;
  doc["sharing"][mps ? "mps" : "timeSlicing"] = block;
  return emit(doc);
}

std::vector<std::string> check_device_plugin_config(const YAML::Node& doc) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  c.scalar_equals(doc, "version", "", "v1");
  static const std::set<std::string> kTop = {"version", "flags", "resources", "sharing", "imex"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (kTop.count(it->first.Scalar()) == 0) c.add(it->first.Scalar(), "unknown top-level key");
  }
  if (doc["flags"] && doc["flags"]["migStrategy"]) {
    std::string s = doc["flags"]["migStrategy"].Scalar();
    if (s != "none" && s != "single" && s != "mixed") c.add("flags.migStrategy", "must be none, single or mixed");
  }
  YAML::Node sharing = c.need(doc, "sharing", "");
  if (sharing) {
    bool ts = sharing.IsMap() && sharing["timeSlicing"];
    bool mps = sharing.IsMap() && sharing["mps"];
    if (ts && mps) c.add("sharing", "timeSlicing and mps are mutually exclusive");
    if (!ts && !mps) c.add("sharing", "needs timeSlicing or mps");
    if (ts) check_sharing_block(c, sharing["timeSlicing"], "sharing.timeSlicing", false);
    if (mps) check_sharing_block(c, sharing["mps"], "sharing.mps", true);
  }
  return c.problems;
}

// --- mig-parted ---------------------------------------------------------------

bool valid_mig_profile_name(std::string_view profile) {
  static const std::regex re(R"(^([1-9][0-9]*c\.)?[1-9][0-9]*g\.[1-9][0-9]*gb(\+[a-z]+)*$)");
  return std::regex_match(std::string(profile), re);
}

std::map<std::string, int> parse_profile_counts(std::string_view text) {
  std::map<std::string, int> out;
  std::string_view rest = text;
  auto fail = [&](std::string_view why) {
    throw std::invalid_argument(fmt::format("invalid MIG layout \"{}\": {}", text, why));
  };
  if (rest.empty()) fail("empty");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("\"{}\" is not <profile>=<count>", item));
    std::string profile(item.substr(0, eq));
    std::string_view count = item.substr(eq + 1);
    if (!valid_mig_profile_name(profile)) fail(fmt::format("\"{}\" is not a MIG profile name", profile));
    if (count.empty() || count.size() > 2) fail(fmt::format("count \"{}\" must be 0..99", count));
    int n = 0;
    for (char ch : count) {
      if (ch < '0' || ch > '9') fail(fmt::format("count \"{}\" must be 0..99", count));
      n = n * 10 + (ch - '0');
    }
    if (!out.emplace(profile, n).second) fail(fmt::format("profile {} given twice", profile));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

std::string mig_parted_config_yaml(const MigPartedConfig& cfg) {
  if (cfg.empty()) bad("mig-configs", "at least one named config is required");
  // Written with the emitter so that PCI ids are quoted: a plain 0x233010DE
  // would read back as an integer.
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "version" << YAML::Value << "v1";
  out << YAML::Key << "mig-configs" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, entries] : cfg) {
    if (name.empty()) bad("mig-configs", "empty config name");
    if (entries.empty()) bad("mig-configs." + name, "at least one entry is required");
    out << YAML::Key << name << YAML::Value << YAML::BeginSeq;
    for (const auto& e : entries) {
      out << YAML::BeginMap;
      if (!e.device_filter.empty()) {
        out << YAML::Key << "device-filter" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& d : e.device_filter) out << YAML::DoubleQuoted << d;
        out << YAML::EndSeq;
      }
      out << YAML::Key << "devices" << YAML::Value;
      if (e.devices) {
        out << YAML::Flow << YAML::BeginSeq;
        for (int i : *e.devices) {
          if (i < 0) bad("mig-configs." + name + ".devices", fmt::format("negative GPU index {}", i));
          out << i;
        }
        out << YAML::EndSeq;
      } else {
        out << "all";
      }
      out << YAML::Key << "mig-enabled" << YAML::Value << e.mig_enabled;
      if (e.mig_enabled) {
        out << YAML::Key << "mig-devices" << YAML::Value << YAML::BeginMap;
        for (const auto& [p, count] : e.mig_devices) {
          if (!valid_mig_profile_name(p)) {
            bad("mig-configs." + name + ".mig-devices", fmt::format("\"{}\" is not a MIG profile name", p));
          }
          if (count < 0) bad("mig-configs." + name + ".mig-devices." + p, "negative count");
          out << YAML::Key << YAML::DoubleQuoted << p << YAML::Value << count;
        }
        out << YAML::EndMap;
      } else if (!e.mig_devices.empty()) {
        bad("mig-configs." + name + ".mig-devices", "must be empty when mig-enabled is false");
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> check_mig_parted_config(const YAML::Node& doc) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  c.scalar_equals(doc, "version", "", "v1");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    std::string k = it->first.Scalar();
    if (k != "version" && k != "mig-configs") c.add(k, "unknown top-level key");
  }
  YAML::Node configs = c.need(doc, "mig-configs", "");
  if (!configs) return c.problems;
  if (!configs.IsMap() || configs.size() == 0) {
    c.add("mig-configs", "must be a non-empty map");
    return c.problems;
  }
  for (auto it = configs.begin(); it != configs.end(); ++it) {
    std::string path = "mig-configs." + it->first.Scalar();
    const YAML::Node& entries = it->second;
    if (!entries.IsSequence() || entries.size() == 0) {
      c.add(path, "must be a non-empty list");
      continue;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string ep = fmt::format("{}[{}]", path, i);
      const YAML::Node& e = entries[i];
      if (!e.IsMap()) {
        c.add(ep, "must be a map");
        continue;
      }
      if (e["device-filter"]) {
        const YAML::Node& f = e["device-filter"];
        bool ok = f.IsScalar() || f.IsSequence();
        auto plain_number = [](const YAML::Node& x) {
          int64_t v;
          return is_plain(x) && (as_int(x, v) || x.Scalar().rfind("0x", 0) == 0 || x.Scalar().rfind("0X", 0) == 0);
        };
        bool quoted = !(f.IsScalar() && plain_number(f));
        if (f.IsSequence()) {
          for (const auto& x : f) {
            ok = ok && x.IsScalar();
            quoted = quoted && !plain_number(x);
          }
        }
        if (!ok) c.add(ep + ".device-filter", "must be a string or a list of strings");
        if (ok && !quoted) c.add(ep + ".device-filter", "PCI ids must be quoted strings (a plain 0x... reads as an integer)");
      }
      YAML::Node devices = c.need(e, "devices", ep);
      if (devices) {
        if (devices.IsScalar()) {
          if (devices.Scalar() != "all") c.add(ep + ".devices", "a string must be \"all\"");
        } else if (devices.IsSequence()) {
          for (size_t d = 0; d < devices.size(); ++d) {
            int64_t v;
            if (!as_int(devices[d], v) || v < 0) c.add(fmt::format("{}.devices[{}]", ep, d), "must be a GPU index");
          }
        } else {
          c.add(ep + ".devices", "must be \"all\" or a list of GPU indices");
        }
      }
      YAML::Node enabled = c.need(e, "mig-enabled", ep);
      bool on = false;
      if (enabled && !as_bool(enabled, on)) c.add(ep + ".mig-enabled", "must be a boolean");
      const YAML::Node& md = e["mig-devices"];
      if (on && !md) c.add(ep + ".mig-devices", "required when mig-enabled is true");
      if (md) {
        if (!md.IsMap()) {
          c.add(ep + ".mig-devices", "must be a map of profile -> count");
        } else {
          if (!on && md.size() > 0) c.add(ep + ".mig-devices", "must be empty when mig-enabled is false");
          for (auto p = md.begin(); p != md.end(); ++p) {
            std::string name = p->first.Scalar();
            int64_t n;
            if (!valid_mig_profile_name(name)) c.add(ep + ".mig-devices." + name, "not a MIG profile name");
            if (!as_int(p->second, n) || n < 0) c.add(ep + ".mig-devices." + name, "count must be an integer >= 0");
          }
        }
      }
    }
  }
  return c.problems;
}

// --- descheduler ------------------------------------------------------------

namespace {
std::string_view strategy_name(DeschedulerConfig::Strategy s) {
  return s == DeschedulerConfig::Strategy::kLowNodeUtilization ? "LowNodeUtilization" : "HighNodeUtilization";
}

void check_percent_map(Checker& c, const YAML::Node& m, const std::string& path, std::map<std::string, int64_t>& out) {
  if (!m.IsMap() || m.size() == 0) {
    c.add(path, "must be a non-empty map of resource -> percent");
    return;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    std::string k = it->first.Scalar();
    int64_t v;
    if (!as_int(it->second, v) || v < 0 || v > 100) {
      c.add(path + "." + k, "must be an integer percent 0..100");
    } else {
      out[k] = v;
    }
  }
}
}  // namespace

std::string descheduler_policy_yaml(const DeschedulerConfig& cfg) {
  bool low = cfg.strategy == DeschedulerConfig::Strategy::kLowNodeUtilization;
  auto percent_map = [](const std::map<std::string, int>& m, std::string_view field) {
    YAML::Node n(YAML::NodeType::Map);
    for (const auto& [k, v] : m) {
      if (v < 0 || v > 100) bad(fmt::format("{}.{}", field, k), fmt::format("{} is not a percent 0..100", v));
      n[k] = v;
    }
    return n;
  };
  if (cfg.thresholds.count("nvidia.com/gpu") == 0) bad("thresholds", "must include nvidia.com/gpu");
  YAML::Node args;
  args["thresholds"] = percent_map(cfg.thresholds, "thresholds");
  if (low) {
    for (const auto& [k, v] : cfg.thresholds) {
      auto it = cfg.target_thresholds.find(k);
      if (it == cfg.target_thresholds.end()) bad("targetThresholds", fmt::format("missing {}", k));
      if (it->second < v) bad("targetThresholds." + k, fmt::format("{} is below the threshold {}", it->second, v));
    }
    if (cfg.target_thresholds.size() != cfg.thresholds.size()) bad("targetThresholds", "must name the same resources as thresholds");
    args["targetThresholds"] = percent_map(cfg.target_thresholds, "targetThresholds");
  }
  YAML::Node evictor;
  evictor["name"] = "DefaultEvictor";
  evictor["args"]["nodeFit"] = true;
  YAML::Node plugin;
  plugin["name"] = std::string(strategy_name(cfg.strategy));
  plugin["args"] = args;
  YAML::Node profile;
  profile["name"] = cfg.profile_name;
  profile["pluginConfig"].push_back(evictor);
  profile["pluginConfig"].push_back(plugin);
  profile["plugins"]["balance"]["enabled"].push_back(std::string(strategy_name(cfg.strategy)));
  YAML::Node doc;
  doc["apiVersion"] = "descheduler/v1alpha2";
  doc["kind"] = "DeschedulerPolicy";
  doc["profiles"].push_back(profile);
  return emit(doc);
}

std::vector<std::string> check_descheduler_policy(const YAML::Node& doc) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  c.scalar_equals(doc, "apiVersion", "", "descheduler/v1alpha2");
  c.scalar_equals(doc, "kind", "", "DeschedulerPolicy");
  YAML::Node profiles = c.need(doc, "profiles", "");
  if (!profiles) return c.problems;
  if (!profiles.IsSequence() || profiles.size() == 0) {
    c.add("profiles", "must be a non-empty list");
    return c.problems;
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    std::string pp = fmt::format("profiles[{}]", i);
    const YAML::Node& p = profiles[i];
    YAML::Node name = c.need(p, "name", pp);
    if (name && (!name.IsScalar() || name.Scalar().empty())) c.add(pp + ".name", "must be a non-empty string");
    std::set<std::string> configured;
    YAML::Node pcs = c.need(p, "pluginConfig", pp);
    if (pcs && pcs.IsSequence()) {
      for (size_t j = 0; j < pcs.size(); ++j) {
        std::string cp = fmt::format("{}.pluginConfig[{}]", pp, j);
        YAML::Node pname = c.need(pcs[j], "name", cp);
        if (!pname || !pname.IsScalar()) continue;
        std::string n = pname.Scalar();
        configured.insert(n);
        if (n != "LowNodeUtilization" && n != "HighNodeUtilization") continue;
        YAML::Node args = c.need(pcs[j], "args", cp);
        if (!args) continue;
        std::map<std::string, int64_t> th, target;
        YAML::Node t = c.need(args, "thresholds", cp + ".args");
        if (t) check_percent_map(c, t, cp + ".args.thresholds", th);
        if (t && t.IsMap() && !t["nvidia.com/gpu"]) c.add(cp + ".args.thresholds", "must include nvidia.com/gpu");
        if (n == "LowNodeUtilization") {
          YAML::Node tt = c.need(args, "targetThresholds", cp + ".args");
          if (tt) check_percent_map(c, tt, cp + ".args.targetThresholds", target);
          for (const auto& [k, v] : th) {
            auto it = target.find(k);
            if (it == target.end()) c.add(cp + ".args.targetThresholds", "missing " + k);
            else if (it->second < v) c.add(cp + ".args.targetThresholds." + k, "below its threshold");
          }
        } else if (args["targetThresholds"]) {
          c.add(cp + ".args.targetThresholds", "not used by HighNodeUtilization");
        }
      }
    } else if (pcs) {
      c.add(pp + ".pluginConfig", "must be a list");
    }
    YAML::Node enabled = p["plugins"]["balance"]["enabled"];
    if (!enabled || !enabled.IsSequence()) {
      c.add(pp + ".plugins.balance.enabled", "missing");
    } else {
      for (const auto& e : enabled) {
        if (!e.IsScalar() || configured.count(e.Scalar()) == 0) {
          c.add(pp + ".plugins.balance.enabled", fmt::format("{} has no pluginConfig", e.IsScalar() ? e.Scalar() : "?"));
        }
      }
    }
  }
  return c.problems;
}

// --- scheduler ----------------------------------------------------------------

std::string scheduler_config_yaml(const SchedulerExtenderConfig& cfg) {
  if (cfg.url_prefix.empty()) bad("urlPrefix", "required");
  if (!cfg.prioritize_verb.empty() && cfg.weight <= 0) bad("weight", fmt::format("{} must be > 0 with a prioritizeVerb", cfg.weight));
  if (!valid_duration(cfg.http_timeout)) bad("httpTimeout", fmt::format("\"{}\" is not a duration", cfg.http_timeout));
  std::set<std::string> seen;
  YAML::Node ext;
  ext["urlPrefix"] = cfg.url_prefix;
  if (!cfg.filter_verb.empty()) ext["filterVerb"] = cfg.filter_verb;
  if (!cfg.prioritize_verb.empty()) ext["prioritizeVerb"] = cfg.prioritize_verb;
  if (!cfg.preempt_verb.empty()) ext["preemptVerb"] = cfg.preempt_verb;
  if (!cfg.bind_verb.empty()) ext["bindVerb"] = cfg.bind_verb;
  ext["weight"] = cfg.weight;
  ext["enableHTTPS"] = false;
  ext["nodeCacheCapable"] = cfg.node_cache_capable;
  ext["ignorable"] = cfg.ignorable;
  ext["httpTimeout"] = cfg.http_timeout;
  YAML::Node managed(YAML::NodeType::Sequence);
  for (const auto& r : cfg.managed_resources) {
    if (!valid_resource_name(r)) bad("managedResources", fmt::format("\"{}\" is not an extended resource name", r));
    if (!seen.insert(r).second) bad("managedResources", fmt::format("\"{}\" given twice", r));
    YAML::Node m;
    m["name"] = r;
    m["ignoredByScheduler"] = true;
    managed.push_back(m);
  }
  ext["managedResources"] = managed;
  YAML::Node doc;
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1";
  doc["kind"] = "KubeSchedulerConfiguration";
  doc["leaderElection"]["leaderElect"] = cfg.leader_elect;
  YAML::Node profile;
  profile["schedulerName"] = cfg.scheduler_name;
  doc["profiles"].push_back(profile);
  doc["extenders"].push_back(ext);
  return emit(doc);
}

std::vector<std::string> check_scheduler_config(const YAML::Node& doc) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  c.scalar_equals(doc, "apiVersion", "", "kubescheduler.config.k8s.io/v1");
  c.scalar_equals(doc, "kind", "", "KubeSchedulerConfiguration");
  if (doc["profiles"]) {
    if (!doc["profiles"].IsSequence()) c.add("profiles", "must be a list");
    else
      for (size_t i = 0; i < doc["profiles"].size(); ++i) {
        YAML::Node n = c.need(doc["profiles"][i], "schedulerName", fmt::format("profiles[{}]", i));
        if (n && (!n.IsScalar() || n.Scalar().empty())) c.add(fmt::format("profiles[{}].schedulerName", i), "must be a non-empty string");
      }
  }
  YAML::Node exts = c.need(doc, "extenders", "");
  if (!exts) return c.problems;
  if (!exts.IsSequence() || exts.size() == 0) {
    c.add("extenders", "must be a non-empty list");
    return c.problems;
  }
  int binders = 0;
  std::set<std::string> managed_seen;
  static const std::set<std::string> kKeys = {"urlPrefix", "filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb",
                                              "weight", "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                                              "managedResources", "ignorable"};
  for (size_t i = 0; i < exts.size(); ++i) {
    std::string ep = fmt::format("extenders[{}]", i);
    const YAML::Node& e = exts[i];
    if (!e.IsMap()) {
      c.add(ep, "must be a map");
      continue;
    }
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (kKeys.count(it->first.Scalar()) == 0) c.add(ep + "." + it->first.Scalar(), "unknown key");
    }
    YAML::Node url = c.need(e, "urlPrefix", ep);
    if (url && (!url.IsScalar() || url.Scalar().empty())) c.add(ep + ".urlPrefix", "must be a non-empty string");
    for (const char* verb : {"filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb"}) {
      if (e[verb] && !e[verb].IsScalar()) c.add(ep + "." + verb, "must be a string");
    }
    if (e["bindVerb"] && e["bindVerb"].IsScalar() && !e["bindVerb"].Scalar().empty()) ++binders;
    int64_t weight = 0;
    if (e["weight"] && !as_int(e["weight"], weight)) c.add(ep + ".weight", "must be an integer");
    if (e["prioritizeVerb"] && e["prioritizeVerb"].IsScalar() && !e["prioritizeVerb"].Scalar().empty() && weight <= 0) {
      c.add(ep + ".weight", "must be > 0 when prioritizeVerb is set");
    }
    for (const char* b : {"enableHTTPS", "nodeCacheCapable", "ignorable"}) c.optional_bool(e, b, ep);
    if (e["httpTimeout"] && (!e["httpTimeout"].IsScalar() || !valid_duration(e["httpTimeout"].Scalar()))) {
      c.add(ep + ".httpTimeout", "must be a duration such as 10s");
    }
    if (const YAML::Node& m = e["managedResources"]) {
      if (!m.IsSequence()) {
        c.add(ep + ".managedResources", "must be a list");
      } else {
        for (size_t j = 0; j < m.size(); ++j) {
          std::string mp = fmt::format("{}.managedResources[{}]", ep, j);
          YAML::Node name = c.need(m[j], "name", mp);
          if (name && (!name.IsScalar() || !valid_resource_name(name.Scalar()))) {
            c.add(mp + ".name", "must be an extended resource name");
          } else if (name && !managed_seen.insert(name.Scalar()).second) {
            c.add(mp + ".name", fmt::format("{} is managed twice", name.Scalar()));
          }
          c.optional_bool(m[j], "ignoredByScheduler", mp);
        }
      }
    }
  }
  if (binders > 1) c.add("extenders", "at most one extender may set bindVerb");
  return c.problems;
}

std::string configmap_yaml(std::string_view name, std::string_view ns, std::string_view key, std::string_view text) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << std::string(name);
  out << YAML::Key << "namespace" << YAML::Value << std::string(ns);
  out << YAML::EndMap;
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << std::string(key) << YAML::Value << YAML::Literal << std::string(text);
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gpupack
