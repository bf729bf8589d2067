#include "io/k8s_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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
//
// The schema is sigs.k8s.io/descheduler's v1alpha2 DeschedulerPolicy (see
// docs/KUBERNETES.md for the upstream version) as the descheduler loads it:
// decoding is strict and case-sensitive, so an unknown or misspelt key fails
// the whole policy; every pluginConfig name must be an in-tree plugin; every
// enabled plugin needs a pluginConfig entry and must implement the extension
// point it is enabled at; and the argument validators of DefaultEvictor and
// the utilization plugins apply.

namespace {
std::string_view strategy_name(DeschedulerConfig::Strategy s) {
  return s == DeschedulerConfig::Strategy::kLowNodeUtilization ? "LowNodeUtilization" : "HighNodeUtilization";
}

// What a field holds once the YAML is read as JSON.
enum class Kind { kString, kBool, kInt, kUint, kNumber, kMap, kList, kStringList, kDuration };
using Fields = std::vector<std::pair<std::string, Kind>>;

// A plain scalar that YAML reads as a number, boolean or null, not a string.
bool plain_non_string(const YAML::Node& n) {
  if (!is_plain(n)) return false;
  static const std::regex number(R"(^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$)");
  static const std::set<std::string> words = {
      "true", "True", "TRUE", "false", "False", "FALSE", "yes",  "Yes",  "YES",  "no",   "No", "NO",
      "on",   "On",   "ON",   "off",   "Off",   "OFF",   "null", "Null", "NULL", "~",    "",   ".inf",
      ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", ".nan", ".NaN", ".NAN"};
  return words.count(n.Scalar()) > 0 || std::regex_match(n.Scalar(), number);
}

bool as_number(const YAML::Node& n, double& out) {
  static const std::regex re(R"(^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$)");
  if (!is_plain(n) || !std::regex_match(n.Scalar(), re)) return false;
  out = std::stod(n.Scalar());
  return true;
}

bool kind_ok(const YAML::Node& v, Kind k) {
  int64_t i = 0;
  double d = 0;
  bool b = false;
  if (v.IsNull() && (k == Kind::kMap || k == Kind::kList || k == Kind::kStringList)) return true;
  switch (k) {
    case Kind::kString: return v.IsScalar() && !plain_non_string(v);
    case Kind::kBool: return as_bool(v, b);
    case Kind::kInt: return as_int(v, i);
    case Kind::kUint: return as_int(v, i) && i >= 0;
    case Kind::kNumber: return as_number(v, d);
    case Kind::kMap: return v.IsMap();
    case Kind::kList: return v.IsSequence();
    case Kind::kStringList:
      if (!v.IsSequence()) return false;
      for (const auto& x : v)
        if (!x.IsScalar() || plain_non_string(x)) return false;
      return true;
    case Kind::kDuration: return v.IsScalar() && valid_duration(v.Scalar());
  }
  return false;
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::kString: return "a string";
    case Kind::kBool: return "true or false";
    case Kind::kInt: return "an integer";
    case Kind::kUint: return "an integer >= 0";
    case Kind::kNumber: return "a number";
    case Kind::kMap: return "a map";
    case Kind::kList: return "a list";
    case Kind::kStringList: return "a list of strings";
    case Kind::kDuration: return "a duration such as 1h30m";
  }
  return "?";
}

// Every key of `m` must be one of `fields` (exact spelling) and hold its kind.
// Returns false when `m` is not a map.
bool check_fields(Checker& c, const YAML::Node& m, const std::string& path, const Fields& fields) {
  if (!m.IsMap()) {
    c.add(path.empty() ? "document" : path, "must be a map");
    return false;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string at = Checker::join(path, key);
    auto f = std::find_if(fields.begin(), fields.end(), [&](const auto& p) { return p.first == key; });
    if (f == fields.end()) {
      std::string hint;
      auto lower = [](std::string t) {
        for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return t;
      };
      for (const auto& [name, kind] : fields)
        if (lower(name) == lower(key)) hint = fmt::format(" (keys are case-sensitive: \"{}\")", name);
      c.add(at, "unknown field; the descheduler's strict decoding rejects it" + hint);
    } else if (!kind_ok(it->second, f->second)) {
      c.add(at, fmt::format("must be {}", kind_name(f->second)));
    }
  }
  return true;
}

// In-tree plugins and the extension points (plugins.<point>) they implement.
const std::map<std::string, std::set<std::string>>& intree_plugins() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"DefaultEvictor", {"filter", "preevictionfilter"}},
      {"LowNodeUtilization", {"balance"}},
      {"HighNodeUtilization", {"balance"}},
      {"RemoveDuplicates", {"balance"}},
      {"RemovePodsViolatingTopologySpreadConstraint", {"balance"}},
      {"PodLifeTime", {"deschedule"}},
      {"RemoveFailedPods", {"deschedule"}},
      {"RemovePodsHavingTooManyRestarts", {"deschedule"}},
      {"RemovePodsViolatingInterPodAntiAffinity", {"deschedule"}},
      {"RemovePodsViolatingNodeAffinity", {"deschedule"}},
      {"RemovePodsViolatingNodeTaints", {"deschedule"}},
  };
  return m;
}
const std::vector<std::string> kExtensionPoints = {"presort", "sort",   "deschedule",
                                                   "balance", "filter", "preevictionfilter"};

// Resource -> percent maps (api.ResourceThresholds: float percentages).
std::map<std::string, double> check_percent_map(Checker& c, const YAML::Node& m, const std::string& path) {
  std::map<std::string, double> out;
  if (!m.IsMap() || m.size() == 0) {
    c.add(path, "must be a non-empty map of resource -> percent");
    return out;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string k = it->first.Scalar();
    double v = 0;
    if (k.empty()) c.add(path, "empty resource name");
    if (!as_number(it->second, v) || v < 0 || v > 100) {
      c.add(path + "." + k, "must be a percent, a number in 0..100");
    } else {
      out[k] = v;
    }
  }
  return out;
}

void check_evictable_namespaces(Checker& c, const YAML::Node& args, const std::string& path) {
  const YAML::Node ns = args["evictableNamespaces"];
  if (!ns || !ns.IsMap()) return;
  check_fields(c, ns, path + ".evictableNamespaces", {{"include", Kind::kStringList}, {"exclude", Kind::kStringList}});
  if (ns["include"] && ns["include"].IsSequence() && ns["include"].size() > 0)
    c.add(path + ".evictableNamespaces.include", "not supported by the utilization plugins (only exclude)");
}

void check_plugin_args(Checker& c, const std::string& plugin, const YAML::Node& args, const std::string& path) {
  if (plugin == "DefaultEvictor") {
    if (!check_fields(c, args, path,
                      {{"nodeSelector", Kind::kString}, {"labelSelector", Kind::kMap},
                       {"priorityThreshold", Kind::kMap}, {"nodeFit", Kind::kBool},
                       {"minReplicas", Kind::kUint}, {"minPodAge", Kind::kDuration},
                       {"noEvictionPolicy", Kind::kString}, {"podProtections", Kind::kMap},
                       {"evictLocalStoragePods", Kind::kBool}, {"evictDaemonSetPods", Kind::kBool},
                       {"evictSystemCriticalPods", Kind::kBool}, {"ignorePvcPods", Kind::kBool},
                       {"ignorePodsWithoutPDB", Kind::kBool}, {"evictFailedBarePods", Kind::kBool}}))
      return;
    if (const YAML::Node pt = args["priorityThreshold"]; pt && pt.IsMap()) {
      check_fields(c, pt, path + ".priorityThreshold", {{"name", Kind::kString}, {"value", Kind::kInt}});
      if (pt["name"] && pt["value"] && pt["name"].IsScalar() && !pt["name"].Scalar().empty())
        c.add(path + ".priorityThreshold", "only one of name and value may be set");
    }
    if (const YAML::Node pp = args["podProtections"]; pp && pp.IsMap())
      check_fields(c, pp, path + ".podProtections",
                   {{"extraEnabled", Kind::kStringList},
                    {"defaultDisabled", Kind::kStringList},
                    {"config", Kind::kMap}});
    if (const YAML::Node nep = args["noEvictionPolicy"]; nep && nep.IsScalar() && !nep.Scalar().empty() &&
                                                         nep.Scalar() != "Preferred" && nep.Scalar() != "Mandatory")
      c.add(path + ".noEvictionPolicy", "must be Preferred or Mandatory");
    return;
  }
  const bool low = plugin == "LowNodeUtilization";
  if (low || plugin == "HighNodeUtilization") {
    Fields fields = {{"thresholds", Kind::kMap},
                     {"numberOfNodes", Kind::kInt},
                     {"evictionModes", Kind::kStringList},
                     {"evictableNamespaces", Kind::kMap}};
    if (low) {
      fields.insert(fields.end(), {{"useDeviationThresholds", Kind::kBool},
                                   {"targetThresholds", Kind::kMap},
                                   {"metricsUtilization", Kind::kMap},
                                   {"evictionLimits", Kind::kMap}});
    }
    if (!check_fields(c, args, path, fields)) return;
    check_evictable_namespaces(c, args, path);
    std::map<std::string, double> th, target;
    const YAML::Node t = c.need(args, "thresholds", path);
    if (t) th = check_percent_map(c, t, path + ".thresholds");
    // gpupack's own rule: a gpupack policy balances GPUs.
    if (t && t.IsMap() && !t["nvidia.com/gpu"]) c.add(path + ".thresholds", "must include nvidia.com/gpu");
    if (!low) return;
    const YAML::Node tt = c.need(args, "targetThresholds", path);
    if (tt) target = check_percent_map(c, tt, path + ".targetThresholds");
    bool deviation = false;
    if (args["useDeviationThresholds"]) as_bool(args["useDeviationThresholds"], deviation);
    for (const auto& [k, v] : th) {
      auto it = target.find(k);
      if (it == target.end()) {
        if (tt && tt.IsMap() && !tt[k])
          c.add(path + ".targetThresholds", "missing " + k + " (both maps must name the same resources)");
      } else if (it->second < v && !deviation) {
        c.add(path + ".targetThresholds." + k, "below its threshold");
      }
    }
    if (tt && tt.IsMap() && t && t.IsMap()) {
      for (auto it = tt.begin(); it != tt.end(); ++it) {
        if (!t[it->first.Scalar()])
          c.add(path + ".thresholds", "missing " + it->first.Scalar() + " (both maps must name the same resources)");
      }
    }
    return;
  }
  // Other in-tree plugins: their arguments are not checked field by field.
  if (!args.IsMap()) c.add(path, "must be a map");
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
  if (cfg.profile_name.empty()) bad("profiles[0].name", "must not be empty");
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
  // Only fields every v1alpha2 release reads: DefaultEvictor's nodeFit,
  // the utilization plugins' thresholds, the balance extension point. The
  // DefaultEvictor is enabled at filter and preevictionfilter by the loader.
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
  if (!check_fields(c, doc, "",
                    {{"apiVersion", Kind::kString}, {"kind", Kind::kString}, {"profiles", Kind::kList},
                     {"nodeSelector", Kind::kString}, {"maxNoOfPodsToEvictPerNode", Kind::kUint},
                     {"maxNoOfPodsToEvictPerNamespace", Kind::kUint}, {"maxNoOfPodsToEvictTotal", Kind::kUint},
                     {"evictionFailureEventNotification", Kind::kBool}, {"metricsCollector", Kind::kMap},
                     {"metricsProviders", Kind::kList}, {"gracePeriodSeconds", Kind::kUint}}))
    return c.problems;
  c.scalar_equals(doc, "apiVersion", "", "descheduler/v1alpha2");
  c.scalar_equals(doc, "kind", "", "DeschedulerPolicy");
  bool collector = false;
  if (const YAML::Node mc = doc["metricsCollector"]; mc && mc.IsMap()) {
    check_fields(c, mc, "metricsCollector", {{"enabled", Kind::kBool}});
    if (mc["enabled"]) as_bool(mc["enabled"], collector);
  }
  if (const YAML::Node mp = doc["metricsProviders"]; mp && mp.IsSequence()) {
    if (mp.size() > 1) c.add("metricsProviders", fmt::format("at most one provider, got {}", mp.size()));
    if (mp.size() > 0 && collector) c.add("metricsProviders", "cannot be combined with metricsCollector.enabled");
    for (size_t i = 0; i < mp.size(); ++i) {
      const std::string pp = fmt::format("metricsProviders[{}]", i);
      if (!check_fields(c, mp[i], pp, {{"source", Kind::kString}, {"prometheus", Kind::kMap}})) continue;
      if (mp[i]["source"] && mp[i]["source"].IsScalar() && mp[i]["source"].Scalar() != "KubernetesMetrics" &&
          mp[i]["source"].Scalar() != "Prometheus")
        c.add(pp + ".source", "must be KubernetesMetrics or Prometheus");
      if (const YAML::Node pr = mp[i]["prometheus"]; pr && pr.IsMap())
        check_fields(c, pr, pp + ".prometheus", {{"url", Kind::kString}, {"authToken", Kind::kMap}});
    }
  }
  YAML::Node profiles = c.need(doc, "profiles", "");
  if (!profiles) return c.problems;
  if (!profiles.IsSequence() || profiles.size() == 0) {
    c.add("profiles", "must be a non-empty list");
    return c.problems;
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    const std::string pp = fmt::format("profiles[{}]", i);
    const YAML::Node& p = profiles[i];
    if (!check_fields(c, p, pp, {{"name", Kind::kString}, {"pluginConfig", Kind::kList}, {"plugins", Kind::kMap}}))
      continue;
    YAML::Node name = c.need(p, "name", pp);
    if (name && name.IsScalar() && name.Scalar().empty()) c.add(pp + ".name", "must be a non-empty string");
    std::set<std::string> configured;
    if (const YAML::Node pcs = p["pluginConfig"]; pcs && pcs.IsSequence()) {
      for (size_t j = 0; j < pcs.size(); ++j) {
        const std::string cp = fmt::format("{}.pluginConfig[{}]", pp, j);
        if (!check_fields(c, pcs[j], cp, {{"name", Kind::kString}, {"args", Kind::kMap}})) continue;
        YAML::Node pname = c.need(pcs[j], "name", cp);
        if (!pname || !pname.IsScalar()) continue;
        const std::string n = pname.Scalar();
        if (intree_plugins().count(n) == 0) {
          c.add(cp + ".name", fmt::format("\"{}\" is not an in-tree descheduler plugin", n));
          continue;
        }
        configured.insert(n);
        const YAML::Node args = pcs[j]["args"];
        if (args && !args.IsNull()) {
          check_plugin_args(c, n, args, cp + ".args");
        } else if (n == "LowNodeUtilization" || n == "HighNodeUtilization") {
          c.add(cp + ".args", "required: the plugin needs thresholds");
        }
      }
    }
    const YAML::Node plugins = p["plugins"];
    if (!plugins || !plugins.IsMap()) continue;
    std::vector<std::pair<std::string, std::string>> enabled;  // (point, plugin)
    Fields points;
    for (const auto& e : kExtensionPoints) points.push_back({e, Kind::kMap});
    check_fields(c, plugins, pp + ".plugins", points);
    for (const std::string& point : kExtensionPoints) {
      const YAML::Node set = plugins[point];
      if (!set || !set.IsMap()) continue;
      const std::string sp = pp + ".plugins." + point;
      check_fields(c, set, sp, {{"enabled", Kind::kStringList}, {"disabled", Kind::kStringList}});
      const YAML::Node en = set["enabled"];
      if (!en || !en.IsSequence()) continue;
      for (size_t k = 0; k < en.size(); ++k) {
        if (!en[k].IsScalar()) continue;
        const std::string n = en[k].Scalar();
        const std::string ep = fmt::format("{}.enabled[{}]", sp, k);
        auto it = intree_plugins().find(n);
        if (it == intree_plugins().end()) {
          c.add(ep, fmt::format("\"{}\" is not an in-tree descheduler plugin", n));
        } else if (it->second.count(point) == 0) {
          c.add(ep, fmt::format("{} does not implement the {} extension point", n, point));
        } else if (configured.count(n) == 0 && n != "DefaultEvictor") {
          c.add(ep, fmt::format("{} has no pluginConfig entry", n));
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
