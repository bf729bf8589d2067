#include "io/k8s_config.h"

#include "mig/mig_parted_config.h"

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
  if (s == "true")
    out = true;
  else if (s == "false")
    out = false;
  else
    return false;
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
    if (name && (!is_string(name) || !valid_resource_name(name.Scalar())))
      c.add(rp + ".name", "must be a resource name");
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
    if (mps && r.name != "nvidia.com/gpu")
      bad("resources.name", fmt::format("MPS shares only nvidia.com/gpu, not \"{}\"", r.name));
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
enum class FieldKind { kString, kBool, kInt, kUint, kNumber, kMap, kList, kStringList, kDuration };
using Fields = std::vector<std::pair<std::string, FieldKind>>;

// A plain scalar that YAML reads as a number, boolean or null, not a string.
bool plain_non_string(const YAML::Node& n) {
  if (!is_plain(n)) return false;
  static const std::regex number(R"(^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$)");
  static const std::set<std::string> words = {
      "true", "True", "TRUE", "false", "False", "FALSE", "yes",   "Yes",   "YES",  "no",   "No",
      "NO",   "on",   "On",   "ON",    "off",   "Off",   "OFF",   "null",  "Null", "NULL", "~",
      "",     ".inf", ".Inf", ".INF",  "-.inf", "-.Inf", "-.INF", "+.inf", ".nan", ".NaN", ".NAN"};
  return words.count(n.Scalar()) > 0 || std::regex_match(n.Scalar(), number);
}

bool as_number(const YAML::Node& n, double& out) {
  static const std::regex re(R"(^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$)");
  if (!is_plain(n) || !std::regex_match(n.Scalar(), re)) return false;
  out = std::stod(n.Scalar());
  return true;
}

bool kind_ok(const YAML::Node& v, FieldKind k) {
  int64_t i = 0;
  double d = 0;
  bool b = false;
  if (v.IsNull() && (k == FieldKind::kMap || k == FieldKind::kList || k == FieldKind::kStringList)) return true;
  switch (k) {
    case FieldKind::kString:
      return v.IsScalar() && !plain_non_string(v);
    case FieldKind::kBool:
      return as_bool(v, b);
    case FieldKind::kInt:
      return as_int(v, i);
    case FieldKind::kUint:
      return as_int(v, i) && i >= 0;
    case FieldKind::kNumber:
      return as_number(v, d);
    case FieldKind::kMap:
      return v.IsMap();
    case FieldKind::kList:
      return v.IsSequence();
    case FieldKind::kStringList:
      if (!v.IsSequence()) return false;
      for (const auto& x : v)
        if (!x.IsScalar() || plain_non_string(x)) return false;
      return true;
    case FieldKind::kDuration:
      return v.IsScalar() && valid_duration(v.Scalar());
  }
  return false;
}

std::string_view field_kind_name(FieldKind k) {
  switch (k) {
    case FieldKind::kString:
      return "a string";
    case FieldKind::kBool:
      return "true or false";
    case FieldKind::kInt:
      return "an integer";
    case FieldKind::kUint:
      return "an integer >= 0";
    case FieldKind::kNumber:
      return "a number";
    case FieldKind::kMap:
      return "a map";
    case FieldKind::kList:
      return "a list";
    case FieldKind::kStringList:
      return "a list of strings";
    case FieldKind::kDuration:
      return "a duration such as 1h30m";
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
      c.add(at, fmt::format("must be {}", field_kind_name(f->second)));
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
  check_fields(c, ns, path + ".evictableNamespaces",
               {{"include", FieldKind::kStringList}, {"exclude", FieldKind::kStringList}});
  if (ns["include"] && ns["include"].IsSequence() && ns["include"].size() > 0)
    c.add(path + ".evictableNamespaces.include", "not supported by the utilization plugins (only exclude)");
}

void check_plugin_args(Checker& c, const std::string& plugin, const YAML::Node& args, const std::string& path) {
  if (plugin == "DefaultEvictor") {
    if (!check_fields(c, args, path,
                      {{"nodeSelector", FieldKind::kString},
                       {"labelSelector", FieldKind::kMap},
                       {"priorityThreshold", FieldKind::kMap},
                       {"nodeFit", FieldKind::kBool},
                       {"minReplicas", FieldKind::kUint},
                       {"minPodAge", FieldKind::kDuration},
                       {"noEvictionPolicy", FieldKind::kString},
                       {"podProtections", FieldKind::kMap},
                       {"evictLocalStoragePods", FieldKind::kBool},
                       {"evictDaemonSetPods", FieldKind::kBool},
                       {"evictSystemCriticalPods", FieldKind::kBool},
                       {"ignorePvcPods", FieldKind::kBool},
                       {"ignorePodsWithoutPDB", FieldKind::kBool},
                       {"evictFailedBarePods", FieldKind::kBool}}))
      return;
    if (const YAML::Node pt = args["priorityThreshold"]; pt && pt.IsMap()) {
      check_fields(c, pt, path + ".priorityThreshold", {{"name", FieldKind::kString}, {"value", FieldKind::kInt}});
      if (pt["name"] && pt["value"] && pt["name"].IsScalar() && !pt["name"].Scalar().empty())
        c.add(path + ".priorityThreshold", "only one of name and value may be set");
    }
    if (const YAML::Node pp = args["podProtections"]; pp && pp.IsMap())
      check_fields(c, pp, path + ".podProtections",
                   {{"extraEnabled", FieldKind::kStringList},
                    {"defaultDisabled", FieldKind::kStringList},
                    {"config", FieldKind::kMap}});
    if (const YAML::Node nep = args["noEvictionPolicy"];
        nep && nep.IsScalar() && !nep.Scalar().empty() && nep.Scalar() != "Preferred" && nep.Scalar() != "Mandatory")
      c.add(path + ".noEvictionPolicy", "must be Preferred or Mandatory");
    return;
  }
  const bool low = plugin == "LowNodeUtilization";
  if (low || plugin == "HighNodeUtilization") {
    Fields fields = {{"thresholds", FieldKind::kMap},
                     {"numberOfNodes", FieldKind::kInt},
                     {"evictionModes", FieldKind::kStringList},
                     {"evictableNamespaces", FieldKind::kMap}};
    if (low) {
      fields.insert(fields.end(), {{"useDeviationThresholds", FieldKind::kBool},
                                   {"targetThresholds", FieldKind::kMap},
                                   {"metricsUtilization", FieldKind::kMap},
                                   {"evictionLimits", FieldKind::kMap}});
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
    if (cfg.target_thresholds.size() != cfg.thresholds.size())
      bad("targetThresholds", "must name the same resources as thresholds");
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
                    {{"apiVersion", FieldKind::kString},
                     {"kind", FieldKind::kString},
                     {"profiles", FieldKind::kList},
                     {"nodeSelector", FieldKind::kString},
                     {"maxNoOfPodsToEvictPerNode", FieldKind::kUint},
                     {"maxNoOfPodsToEvictPerNamespace", FieldKind::kUint},
                     {"maxNoOfPodsToEvictTotal", FieldKind::kUint},
                     {"evictionFailureEventNotification", FieldKind::kBool},
                     {"metricsCollector", FieldKind::kMap},
                     {"metricsProviders", FieldKind::kList},
                     {"gracePeriodSeconds", FieldKind::kUint}}))
    return c.problems;
  c.scalar_equals(doc, "apiVersion", "", "descheduler/v1alpha2");
  c.scalar_equals(doc, "kind", "", "DeschedulerPolicy");
  bool collector = false;
  if (const YAML::Node mc = doc["metricsCollector"]; mc && mc.IsMap()) {
    check_fields(c, mc, "metricsCollector", {{"enabled", FieldKind::kBool}});
    if (mc["enabled"]) as_bool(mc["enabled"], collector);
  }
  if (const YAML::Node mp = doc["metricsProviders"]; mp && mp.IsSequence()) {
    if (mp.size() > 1) c.add("metricsProviders", fmt::format("at most one provider, got {}", mp.size()));
    if (mp.size() > 0 && collector) c.add("metricsProviders", "cannot be combined with metricsCollector.enabled");
    for (size_t i = 0; i < mp.size(); ++i) {
      const std::string pp = fmt::format("metricsProviders[{}]", i);
      if (!check_fields(c, mp[i], pp, {{"source", FieldKind::kString}, {"prometheus", FieldKind::kMap}})) continue;
      if (mp[i]["source"] && mp[i]["source"].IsScalar() && mp[i]["source"].Scalar() != "KubernetesMetrics" &&
          mp[i]["source"].Scalar() != "Prometheus")
        c.add(pp + ".source", "must be KubernetesMetrics or Prometheus");
      if (const YAML::Node pr = mp[i]["prometheus"]; pr && pr.IsMap())
        check_fields(c, pr, pp + ".prometheus", {{"url", FieldKind::kString}, {"authToken", FieldKind::kMap}});
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
    if (!check_fields(c, p, pp,
                      {{"name", FieldKind::kString}, {"pluginConfig", FieldKind::kList}, {"plugins", FieldKind::kMap}}))
      continue;
    YAML::Node name = c.need(p, "name", pp);
    if (name && name.IsScalar() && name.Scalar().empty()) c.add(pp + ".name", "must be a non-empty string");
    std::set<std::string> configured;
    if (const YAML::Node pcs = p["pluginConfig"]; pcs && pcs.IsSequence()) {
      for (size_t j = 0; j < pcs.size(); ++j) {
        const std::string cp = fmt::format("{}.pluginConfig[{}]", pp, j);
        if (!check_fields(c, pcs[j], cp, {{"name", FieldKind::kString}, {"args", FieldKind::kMap}})) continue;
        YAML::Node pname = c.need(pcs[j], "name", cp);
        if (!pname || !pname.IsScalar()) continue;
        const std::string& n = pname.Scalar();
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
    for (const auto& e : kExtensionPoints) points.push_back({e, FieldKind::kMap});
    check_fields(c, plugins, pp + ".plugins", points);
    for (const std::string& point : kExtensionPoints) {
      const YAML::Node set = plugins[point];
      if (!set || !set.IsMap()) continue;
      const std::string sp = pp + ".plugins." + point;
      check_fields(c, set, sp, {{"enabled", FieldKind::kStringList}, {"disabled", FieldKind::kStringList}});
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
//
// kubescheduler.config.k8s.io versions (KEP-785; removals in
// kubernetes/kubernetes PRs #104782, #117649, #119994): v1beta1 1.19-1.22,
// v1beta2 1.22-1.27, v1beta3 1.23-1.28, v1 1.25 on. The extenders stanza
// and profiles[].schedulerName are spelt alike in all four.

namespace {
struct ApiRange {
  const char* version;
  int first_minor;
  int last_minor;  // inclusive; 1000 = still served
};
constexpr ApiRange kSchedulerApis[] = {
    {"kubescheduler.config.k8s.io/v1beta1", 19, 22},
    {"kubescheduler.config.k8s.io/v1beta2", 22, 27},
    {"kubescheduler.config.k8s.io/v1beta3", 23, 28},
    {"kubescheduler.config.k8s.io/v1", 25, 1000},
};
}  // namespace

int parse_kube_minor(std::string_view version, int lo, int hi) {
  static const std::regex re(R"(^v?1\.([0-9]{1,3})(\.[0-9]{1,4})?$)");
  std::cmatch m;
  const std::string text(version);
  if (!std::regex_match(text.c_str(), m, re)) {
    bad("Kubernetes version", fmt::format("\"{}\" is not a version such as 1.{}", text, hi));
  }
  const int minor = std::stoi(m[1].str());
  if (minor < lo || minor > hi) {
    bad("Kubernetes version", fmt::format("\"{}\" is outside the supported 1.{} .. 1.{}", text, lo, hi));
  }
  return minor;
}

bool scheduler_config_api_served(std::string_view api_version, int kube_minor) {
  for (const auto& r : kSchedulerApis) {
    if (api_version == r.version) return kube_minor >= r.first_minor && kube_minor <= r.last_minor;
  }
  return false;
}

std::string scheduler_config_api_version(int kube_minor) {
  if (kube_minor < kSchedulerMinKubeMinor || kube_minor > kSchedulerMaxKubeMinor) {
    bad("Kubernetes version", fmt::format("1.{} is outside the supported 1.{} .. 1.{}", kube_minor,
                                          kSchedulerMinKubeMinor, kSchedulerMaxKubeMinor));
  }
  // Newest first: kSchedulerApis is ordered oldest to newest.
  for (auto it = std::rbegin(kSchedulerApis); it != std::rend(kSchedulerApis); ++it) {
    if (kube_minor >= it->first_minor && kube_minor <= it->last_minor) return it->version;
  }
  bad("Kubernetes version", fmt::format("1.{} serves no KubeSchedulerConfiguration version", kube_minor));
}

std::string scheduler_config_yaml(const SchedulerExtenderConfig& cfg) {
  const std::string api = scheduler_config_api_version(cfg.kube_minor);
  if (cfg.scheduler_name.empty()) bad("profiles[0].schedulerName", "required");
  if (cfg.url_prefix.empty()) bad("urlPrefix", "required");
  if (!cfg.prioritize_verb.empty() && cfg.weight <= 0)
    bad("weight", fmt::format("{} must be > 0 with a prioritizeVerb", cfg.weight));
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
  // No managedResources unless asked for: with the list set, kube-scheduler
  // calls the extender only for pods that request one of them.
  if (!cfg.managed_resources.empty()) {
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
  }
  YAML::Node doc;
  doc["apiVersion"] = api;
  doc["kind"] = "KubeSchedulerConfiguration";
  doc["leaderElection"]["leaderElect"] = cfg.leader_elect;
  YAML::Node profile;
  profile["schedulerName"] = cfg.scheduler_name;
  doc["profiles"].push_back(profile);
  doc["extenders"].push_back(ext);
  return emit(doc);
}

std::vector<std::string> scheduler_config_warnings(const SchedulerExtenderConfig& cfg) {
  std::vector<std::string> out;
  if (!cfg.managed_resources.empty()) {
    std::string names;
    for (const auto& r : cfg.managed_resources) names += (names.empty() ? "" : ", ") + r;
    out.push_back(fmt::format(
        "managedResources ({}): kube-scheduler sends gpupack only pods whose containers request one of these; "
        "pods that ask for GPUs only through gpupack.io annotations are scheduled without gpupack",
        names));
  }
  if (cfg.node_cache_capable) {
    out.push_back(
        "nodeCacheCapable: true: the scheduler sends node names only; gpupack serve must know every node by the "
        "scheduler's names (API mode, not --nodes files), or each unknown node is filtered out");
  }
  if (cfg.kube_minor < 21) {
    out.push_back(fmt::format("Kubernetes 1.{} ignores FailedAndUnresolvableNodes in filter replies (read from 1.21)",
                              cfg.kube_minor));
  }
  return out;
}

std::vector<std::string> check_scheduler_config(const YAML::Node& doc, std::optional<int> kube_minor) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  YAML::Node api = c.need(doc, "apiVersion", "");
  if (api) {
    const std::string v = api.IsScalar() ? api.Scalar() : "?";
    bool known = false;
    for (const auto& r : kSchedulerApis) known = known || v == r.version;
    if (!known) {
      c.add("apiVersion", fmt::format("\"{}\" is not a KubeSchedulerConfiguration version (kubescheduler.config.k8s.io/"
                                      "v1beta1, v1beta2, v1beta3 or v1)",
                                      v));
    } else if (kube_minor && !scheduler_config_api_served(v, *kube_minor)) {
      c.add("apiVersion", fmt::format("Kubernetes 1.{} does not serve {}", *kube_minor, v));
    }
  }
  c.scalar_equals(doc, "kind", "", "KubeSchedulerConfiguration");
  // Top-level fields of v1beta1 .. v1 together.
  static const std::set<std::string> kTop = {"apiVersion",
                                             "kind",
                                             "parallelism",
                                             "leaderElection",
                                             "clientConnection",
                                             "healthzBindAddress",
                                             "metricsBindAddress",
                                             "enableProfiling",
                                             "enableContentionProfiling",
                                             "percentageOfNodesToScore",
                                             "podInitialBackoffSeconds",
                                             "podMaxBackoffSeconds",
                                             "profiles",
                                             "extenders",
                                             "delayCacheUntilActive"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (kTop.count(k) == 0) c.add(k, "unknown top-level key");
  }
  if (doc["leaderElection"]) {
    if (!doc["leaderElection"].IsMap())
      c.add("leaderElection", "must be a map");
    else
      c.optional_bool(doc["leaderElection"], "leaderElect", "leaderElection");
  }
  if (doc["profiles"]) {
    if (!doc["profiles"].IsSequence())
      c.add("profiles", "must be a list");
    else
      for (size_t i = 0; i < doc["profiles"].size(); ++i) {
        YAML::Node n = c.need(doc["profiles"][i], "schedulerName", fmt::format("profiles[{}]", i));
        if (n && (!n.IsScalar() || n.Scalar().empty()))
          c.add(fmt::format("profiles[{}].schedulerName", i), "must be a non-empty string");
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
  static const std::set<std::string> kKeys = {"urlPrefix",   "filterVerb",       "prioritizeVerb",   "preemptVerb",
                                              "bindVerb",    "weight",           "enableHTTPS",      "tlsConfig",
                                              "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"};
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

// --- DRA ------------------------------------------------------------------------
//
// resource.k8s.io/v1 (kubernetes/api resource/v1/types.go; see
// docs/KUBERNETES.md): DeviceClass spec {selectors, config,
// extendedResourceName}; claim spec {devices: {requests, constraints,
// config}}; a request is {name, exactly | firstAvailable}.

namespace {
constexpr const char* kDraApi = "resource.k8s.io/v1";
constexpr const char* kDraDriver = "gpu.nvidia.com";

bool dns_label(const std::string& s) {
  static const std::regex re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, re);
}
bool dns_subdomain(const std::string& s) {
  static const std::regex re(R"(^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$)");
  return s.size() <= 253 && std::regex_match(s, re);
}

YAML::Node cel_selector(const std::string& expression) {
  YAML::Node n;
  n["cel"]["expression"] = expression;
  return n;
}

YAML::Node object(const std::string& kind, const std::string& name, const std::string& ns) {
  YAML::Node n;
  n["apiVersion"] = kDraApi;
  n["kind"] = kind;
  n["metadata"]["name"] = name;
  if (!ns.empty()) n["metadata"]["namespace"] = ns;
  return n;
}

YAML::Node claim_spec(const std::string& request, const std::string& device_class, int count,
                      const std::vector<std::string>& selectors) {
  YAML::Node exactly;
  exactly["deviceClassName"] = device_class;
  for (const auto& s : selectors) exactly["selectors"].push_back(cel_selector(s));
  exactly["allocationMode"] = "ExactCount";
  exactly["count"] = count;
  YAML::Node r;
  r["name"] = request;
  r["exactly"] = exactly;
  YAML::Node spec;
  spec["devices"]["requests"].push_back(r);
  return spec;
}

void check_selectors(Checker& c, const YAML::Node& sel, const std::string& path) {
  if (!sel.IsSequence()) {
    c.add(path, "must be a list");
    return;
  }
  for (size_t i = 0; i < sel.size(); ++i) {
    const std::string sp = fmt::format("{}[{}]", path, i);
    if (!sel[i].IsMap() || sel[i].size() != 1 || !sel[i]["cel"]) {
      c.add(sp, "must be {cel: {expression: ...}}");
      continue;
    }
    const YAML::Node e = sel[i]["cel"]["expression"];
    if (!sel[i]["cel"].IsMap() || !e || !e.IsScalar() || e.Scalar().empty()) {
      c.add(sp + ".cel.expression", "must be a non-empty CEL expression");
    }
  }
}

void check_known_keys(Checker& c, const YAML::Node& m, const std::string& path, const std::set<std::string>& keys) {
  if (!m.IsMap()) {
    c.add(path, "must be a map");
    return;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (keys.count(k) == 0) c.add(Checker::join(path, k), "unknown field");
  }
}

void check_exact_request(Checker& c, const YAML::Node& x, const std::string& path) {
  check_known_keys(
      c, x, path,
      {"deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"});
  if (!x.IsMap()) return;
  const YAML::Node cls = c.need(x, "deviceClassName", path);
  if (cls && (!cls.IsScalar() || !dns_subdomain(cls.Scalar())))
    c.add(path + ".deviceClassName", "must be a DeviceClass name");
  std::string mode = "ExactCount";
  if (const YAML::Node m = x["allocationMode"]) {
    mode = m.IsScalar() ? m.Scalar() : "?";
    if (mode != "ExactCount" && mode != "All") c.add(path + ".allocationMode", "must be ExactCount or All");
  }
  if (const YAML::Node n = x["count"]) {
    int64_t v = 0;
    if (mode == "All")
      c.add(path + ".count", "must not be set with allocationMode All");
    else if (!as_int(n, v) || v < 1)
      c.add(path + ".count", "must be an integer >= 1");
  }
  if (x["selectors"]) check_selectors(c, x["selectors"], path + ".selectors");
  c.optional_bool(x, "adminAccess", path);
}

void check_claim_spec(Checker& c, const YAML::Node& spec, const std::string& path) {
  check_known_keys(c, spec, path, {"devices"});
  if (!spec.IsMap()) return;
  const YAML::Node devices = c.need(spec, "devices", path);
  if (!devices) return;
  const std::string dp = path + ".devices";
  check_known_keys(c, devices, dp, {"requests", "constraints", "config"});
  if (!devices.IsMap()) return;
  const YAML::Node reqs = c.need(devices, "requests", dp);
  std::set<std::string> names;
  if (reqs && (!reqs.IsSequence() || reqs.size() == 0 || reqs.size() > 32)) {
    c.add(dp + ".requests", "must be a list of 1..32 requests");
  } else if (reqs) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      const std::string rp = fmt::format("{}.requests[{}]", dp, i);
      check_known_keys(c, reqs[i], rp, {"name", "exactly", "firstAvailable"});
      if (!reqs[i].IsMap()) continue;
      const YAML::Node name = c.need(reqs[i], "name", rp);
      if (name && (!name.IsScalar() || !dns_label(name.Scalar())))
        c.add(rp + ".name", "must be a DNS label");
      else if (name && !names.insert(name.Scalar()).second)
        c.add(rp + ".name", "used twice");
      const bool exact = static_cast<bool>(reqs[i]["exactly"]);
      const bool first = static_cast<bool>(reqs[i]["firstAvailable"]);
      if (exact == first) c.add(rp, "needs exactly one of exactly and firstAvailable");
      if (exact) check_exact_request(c, reqs[i]["exactly"], rp + ".exactly");
      if (first) {
        const YAML::Node fa = reqs[i]["firstAvailable"];
        if (!fa.IsSequence() || fa.size() == 0)
          c.add(rp + ".firstAvailable", "must be a non-empty list");
        else
          for (size_t j = 0; j < fa.size(); ++j) {
            const std::string sp = fmt::format("{}.firstAvailable[{}]", rp, j);
            YAML::Node sub = YAML::Clone(fa[j]);
            if (sub.IsMap() && sub["name"])
              sub.remove("name");
            else
              c.add(sp + ".name", "missing");
            check_exact_request(c, sub, sp);
          }
      }
    }
  }
  if (const YAML::Node cons = devices["constraints"]) {
    if (!cons.IsSequence()) {
      c.add(dp + ".constraints", "must be a list");
    } else {
      for (size_t i = 0; i < cons.size(); ++i) {
        const std::string cp = fmt::format("{}.constraints[{}]", dp, i);
        check_known_keys(c, cons[i], cp, {"requests", "matchAttribute", "distinctAttribute"});
        if (!cons[i].IsMap()) continue;
        if (const YAML::Node r = cons[i]["requests"]; r && r.IsSequence()) {
          for (const auto& n : r) {
            if (!n.IsScalar() || names.count(n.Scalar()) == 0)
              c.add(cp + ".requests", "names a request the claim lacks");
          }
        }
        if (!!cons[i]["matchAttribute"] == !!cons[i]["distinctAttribute"]) {
          c.add(cp, "needs exactly one of matchAttribute and distinctAttribute");
        }
      }
    }
  }
}
}  // namespace

std::string dra_config_yaml(const DraConfig& cfg) {
  if (cfg.kube_minor < kDraMinKubeMinor || cfg.kube_minor > kDraMaxKubeMinor) {
    bad("Kubernetes version", fmt::format("1.{}: the DRA objects are written for {} (Kubernetes 1.{} .. 1.{})",
                                          cfg.kube_minor, kDraApi, kDraMinKubeMinor, kDraMaxKubeMinor));
  }
  if (!dns_label(cfg.ns)) bad("metadata.namespace", fmt::format("\"{}\" is not a namespace name", cfg.ns));
  if (cfg.whole_gpus < 1 || cfg.whole_gpus > 64) bad("whole GPUs", fmt::format("{} is not 1..64", cfg.whole_gpus));
  if (cfg.shared_memory_mib < 0) bad("shared memory", fmt::format("{} MiB is negative", cfg.shared_memory_mib));
  if (!valid_mig_profile_format(cfg.mig_profile)) {
    bad("MIG profile", fmt::format("\"{}\" is not a MIG profile name such as 1g.10gb", cfg.mig_profile));
  }
  if (cfg.mig_count < 1 || cfg.mig_count > kMaxMigInstancesPerGpu) {
    bad("MIG count", fmt::format("{} is not 1..{}", cfg.mig_count, kMaxMigInstancesPerGpu));
  }
  const std::string attrs = fmt::format("device.attributes['{}']", kDraDriver);
  std::vector<YAML::Node> docs;
  for (const char* type : {"gpu", "mig"}) {
    YAML::Node dc = object("DeviceClass", fmt::format("{}.nvidia.com", type), "");
    dc["spec"]["selectors"].push_back(
        cel_selector(fmt::format("device.driver == '{}' && {}.type == '{}'", kDraDriver, attrs, type)));
    docs.push_back(dc);
  }
  YAML::Node whole = object("ResourceClaimTemplate", "gpupack-whole-gpu", cfg.ns);
  whole["spec"]["spec"] = claim_spec("gpus", "gpu.nvidia.com", cfg.whole_gpus, {});
  docs.push_back(whole);
  std::vector<std::string> shared_sel;
  if (cfg.shared_memory_mib > 0) {
    shared_sel.push_back(fmt::format("device.capacity['{}'].memory.compareTo(quantity('{}Mi')) >= 0", kDraDriver,
                                     cfg.shared_memory_mib));
  }
  YAML::Node shared = object("ResourceClaim", "gpupack-shared-gpu", cfg.ns);
  shared["spec"] = claim_spec("gpu", "gpu.nvidia.com", 1, shared_sel);
  docs.push_back(shared);
  std::string token = cfg.mig_profile;
  for (char& ch : token) {
    if (ch == '+') ch = '.';
  }
  YAML::Node mig = object("ResourceClaimTemplate", "gpupack-mig-" + token, cfg.ns);
  mig["spec"]["spec"] =
      claim_spec("mig", "mig.nvidia.com", cfg.mig_count, {fmt::format("{}.profile == '{}'", attrs, cfg.mig_profile)});
  docs.push_back(mig);
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) out += (i ? "---\n" : "") + emit(docs[i]);
  return out;
}

std::vector<std::string> check_dra_object(const YAML::Node& doc) {
  Checker c;
  if (!doc.IsMap()) return {"document: must be a map"};
  c.scalar_equals(doc, "apiVersion", "", kDraApi);
  const YAML::Node kind = c.need(doc, "kind", "");
  const std::string k = kind && kind.IsScalar() ? kind.Scalar() : "";
  if (kind && k != "DeviceClass" && k != "ResourceClaim" && k != "ResourceClaimTemplate") {
    c.add("kind", "must be DeviceClass, ResourceClaim or ResourceClaimTemplate");
  }
  check_known_keys(c, doc, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  const YAML::Node meta = c.need(doc, "metadata", "");
  if (meta) {
    const YAML::Node name = c.need(meta, "name", "metadata");
    if (name && (!name.IsScalar() || !dns_subdomain(name.Scalar())))
      c.add("metadata.name", "must be a DNS subdomain name");
    if (k == "DeviceClass" && meta["namespace"]) c.add("metadata.namespace", "a DeviceClass is cluster-scoped");
  }
  const YAML::Node spec = c.need(doc, "spec", "");
  if (!spec) return c.problems;
  if (k == "DeviceClass") {
    check_known_keys(c, spec, "spec", {"selectors", "config", "extendedResourceName"});
    if (spec.IsMap() && spec["selectors"]) check_selectors(c, spec["selectors"], "spec.selectors");
  } else if (k == "ResourceClaim") {
    check_claim_spec(c, spec, "spec");
  } else if (k == "ResourceClaimTemplate") {
    check_known_keys(c, spec, "spec", {"metadata", "spec"});
    if (spec.IsMap()) {
      const YAML::Node inner = c.need(spec, "spec", "spec");
      if (inner) check_claim_spec(c, inner, "spec.spec");
    }
  }
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
