#include "mig/mig_parted_config.h"

#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace gpupack {
namespace {

bool valid_pci_id(const std::string& s) {
  static const std::regex re("^0x[0-9A-Fa-f]{8}$");
  return std::regex_match(s, re);
}

std::string at(const YAML::Node& n) {
  const auto mark = n.Mark();
  if (mark.line < 0) return "";
  return fmt::format(" (line {})", mark.line + 1);
}

// yaml-cpp tags plain scalars "?" and quoted ones "!". mig-parted reads its
// file as YAML 1.1 into JSON types, so a quoted "2" is a string, not a count.
bool plain_scalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

std::string text_of(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : "?"; }

std::optional<long long> as_int(const YAML::Node& n) {
  if (!plain_scalar(n)) return std::nullopt;
  static const std::regex re("^[+-]?[0-9]{1,9}$");
  if (!std::regex_match(n.Scalar(), re)) return std::nullopt;
  return std::stoll(n.Scalar());
}

std::optional<bool> as_bool(const YAML::Node& n) {
  if (!plain_scalar(n)) return std::nullopt;
  if (n.Scalar() == "true") return true;
  if (n.Scalar() == "false") return false;
  return std::nullopt;
}

// A plain scalar that a YAML 1.1 loader reads as a number (0x.., 0o.., digits).
bool reads_as_number(const YAML::Node& n) {
  static const std::regex re(R"(^[-+]?(0[xX][0-9A-Fa-f_]+|0[oO]?[0-7_]+|[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?)$)");
  return plain_scalar(n) && std::regex_match(n.Scalar(), re);
}

// Compute slices a profile takes at least: C of "Cc.Gg...", else G.
int min_compute_slices(const std::string& profile) {
  static const std::regex re(R"(^(?:([0-9]+)c\.)?([0-9]+)g\.)");
  std::smatch m;
  if (!std::regex_search(profile, m, re)) return 1;
  const std::string digits = m[1].matched ? m[1].str() : m[2].str();
  return digits.size() > 2 ? 100 : std::stoi(digits);
}

struct MigPartedChecker {
  bool with_lines = true;
  std::vector<std::string> errors;
  void error(const std::string& path, const YAML::Node& n, const std::string& what) {
    errors.push_back(fmt::format("{}{}: {}", path, with_lines ? at(n) : "", what));
  }

  void check_entry(const std::string& path, const YAML::Node& e, MigPartedEntry* out) {
    if (!e.IsMap()) {
      error(path, e, "an entry must be a map with devices, mig-enabled, mig-devices");
      return;
    }
    static const std::set<std::string> kKeys = {"device-filter", "devices", "mig-enabled", "mig-devices"};
    for (const auto& kv : e) {
      const std::string key = text_of(kv.first);
      if (!kKeys.count(key)) {
        error(path, kv.first,
              fmt::format("unknown key '{}' (allowed: device-filter, devices, mig-enabled, mig-devices)", key));
      }
    }
    // device-filter: string or list of strings, each a quoted PCI device+vendor id.
    if (const auto f = e["device-filter"]; f) {
      std::vector<YAML::Node> items;
      if (f.IsScalar()) {
        items.push_back(f);
      } else if (f.IsSequence()) {
        for (const auto& x : f) items.push_back(x);
      } else {
        error(path + ".device-filter", f, "must be a string or a list of strings");
      }
      for (const auto& x : items) {
        if (x.IsScalar() && reads_as_number(x)) {
          error(path + ".device-filter", x,
                fmt::format("'{}': PCI ids must be quoted strings (a plain 0x... reads as an integer)", x.Scalar()));
        } else if (!x.IsScalar() || !valid_pci_id(x.Scalar())) {
          error(path + ".device-filter", x, fmt::format("'{}' is not a PCI device id such as 0x20B010DE", text_of(x)));
        } else if (out) {
          out->device_filter.push_back(x.Scalar());
        }
      }
    }
    // devices: "all" or a list of GPU indices.
    const auto d = e["devices"];
    if (!d) {
      error(path, e, "missing required key 'devices'");
    } else if (d.IsScalar()) {
      if (d.Scalar() != "all") {
        error(path + ".devices", d, fmt::format("'{}' is neither \"all\" nor a list of GPU indices", d.Scalar()));
      }
    } else if (d.IsSequence()) {
      std::vector<int> idx;
      std::set<long long> seen;
      for (const auto& x : d) {
        const auto v = as_int(x);
        if (!v || *v < 0 || *v > 1024) {
          error(path + ".devices", x, fmt::format("'{}' is not a GPU index", text_of(x)));
        } else if (!seen.insert(*v).second) {
          error(path + ".devices", x, fmt::format("GPU index {} listed twice", *v));
        } else {
          idx.push_back(static_cast<int>(*v));
        }
      }
      if (d.size() == 0) error(path + ".devices", d, "the list of GPU indices is empty");
      if (out) out->devices = idx;
    } else {
      error(path + ".devices", d, "must be \"all\" or a list of GPU indices");
    }
    // mig-enabled: a plain true or false.
    const auto en = e["mig-enabled"];
    std::optional<bool> enabled;
    if (!en) {
      error(path, e, "missing required key 'mig-enabled'");
    } else if (!(enabled = as_bool(en))) {
      error(path + ".mig-enabled", en, fmt::format("'{}' is not a boolean (true or false)", text_of(en)));
    }
    if (out && enabled) out->mig_enabled = *enabled;
    // mig-devices: profile -> count; required when enabled, empty when not.
    const auto md = e["mig-devices"];
    if (enabled && *enabled && !md) {
      error(path, e, "missing 'mig-devices' (required when mig-enabled is true; may be {})");
    }
    if (!md) return;
    if (md.IsNull()) {
      if (enabled && *enabled) error(path + ".mig-devices", md, "must be a map (use {} for none)");
      return;
    }
    if (!md.IsMap()) {
      error(path + ".mig-devices", md, "must be a map of profile to count");
      return;
    }
    if (enabled && !*enabled && md.size() > 0) {
      error(path + ".mig-devices", md, "must be empty when mig-enabled is false");
    }
    MigProfileCounts counts;
    bool all_ok = true;
    for (const auto& kv : md) {
      const std::string key = text_of(kv.first);
      if (!valid_mig_profile_format(key)) {
        error(path + ".mig-devices", kv.first,
              fmt::format("'{}' is not a MIG profile name such as 1g.5gb or 1c.3g.20gb", key));
        all_ok = false;
        continue;
      }
      const auto v = as_int(kv.second);
      if (!v || *v < 0) {
        error(path + ".mig-devices." + key, kv.second,
              fmt::format("count '{}' is not a non-negative integer", text_of(kv.second)));
        all_ok = false;
        continue;
      }
      counts[key] = static_cast<int>(std::min<long long>(*v, 1000));
    }
    if (all_ok) {
      if (const std::string why = check_mig_devices(counts); !why.empty()) error(path + ".mig-devices", md, why);
    }
    if (out) out->mig_devices = counts;
  }

  void check(const YAML::Node& root, MigPartedConfig* out) {
    if (!root.IsMap()) {
      error("(document)", root, "the top level must be a map with 'version' and 'mig-configs'");
      return;
    }
    for (const auto& kv : root) {
      const std::string key = text_of(kv.first);
      if (key != "version" && key != "mig-configs") {
        error(key, kv.first, "unknown top-level key (allowed: version, mig-configs)");
      }
    }
    const auto version = root["version"];
    if (!version) {
      error("version", root, "missing required key 'version'");
    } else if (!version.IsScalar() || version.Scalar() != "v1") {
      error("version", version, fmt::format("'{}' is not supported (only v1)", text_of(version)));
    }
    const auto configs = root["mig-configs"];
    if (!configs) {
      error("mig-configs", root, "missing required key 'mig-configs'");
      return;
    }
    if (!configs.IsMap() || configs.size() == 0) {
      error("mig-configs", configs, "must be a map with at least one named config");
      return;
    }
    for (const auto& kv : configs) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const std::string path = "mig-configs." + name;
      if (name.empty()) {
        error("mig-configs", kv.first, "config name must be a non-empty string");
        continue;
      }
      const YAML::Node& entries = kv.second;
      if (!entries.IsSequence() || entries.size() == 0) {
        error(path, entries, "must be a list of at least one entry");
        continue;
      }
      std::vector<MigPartedEntry> parsed;
      for (size_t i = 0; i < entries.size(); ++i) {
        MigPartedEntry entry;
        check_entry(fmt::format("{}[{}]", path, i), entries[i], out ? &entry : nullptr);
        parsed.push_back(std::move(entry));
      }
      if (out) out->configs[name] = std::move(parsed);
    }
  }
};

void emit_entry(YAML::Emitter& y, const MigPartedEntry& e) {
  y << YAML::BeginMap;
  if (!e.device_filter.empty()) {
    y << YAML::Key << "device-filter" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& f : e.device_filter) y << YAML::DoubleQuoted << f;
    y << YAML::EndSeq;
  }
  y << YAML::Key << "devices" << YAML::Value;
  if (e.devices) {
    y << YAML::Flow << YAML::BeginSeq;
    for (int d : *e.devices) y << d;
    y << YAML::EndSeq;
  } else {
    y << "all";
  }
  y << YAML::Key << "mig-enabled" << YAML::Value << e.mig_enabled;
  if (e.mig_enabled) {
    y << YAML::Key << "mig-devices" << YAML::Value;
    if (e.mig_devices.empty()) {
      y << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    } else {
      y << YAML::BeginMap;
      for (const auto& [profile, n] : e.mig_devices) {
        y << YAML::Key << YAML::DoubleQuoted << profile << YAML::Value << n;
      }
      y << YAML::EndMap;
    }
  }
  y << YAML::EndMap;
}

}  // namespace

bool valid_mig_profile_format(std::string_view profile) {
  static const std::regex re(R"(^([1-9][0-9]*c\.)?[1-9][0-9]*g\.[1-9][0-9]*gb(\+me|\+me\.all|-me|\+gfx)?$)");
  return std::regex_match(profile.begin(), profile.end(), re);
}

bool MigPartedEntry::selects(int index, const std::vector<std::string>& pci_ids) const {
  if (!device_filter.empty()) {
    bool match = false;
    for (const auto& f : device_filter) {
      for (const auto& id : pci_ids) match = match || iequals(f, id);
    }
    if (!match) return false;
  }
  if (!devices) return true;
  return std::find(devices->begin(), devices->end(), index) != devices->end();
}

std::string to_yaml(const MigPartedConfig& config) {
  // What the emitter would drop silently is refused here; everything else is
  // refused by the validator run over the emitted text, so the writer and the
  // validator cannot disagree.
  for (const auto& [name, entries] : config.configs) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!entries[i].mig_enabled && !entries[i].mig_devices.empty()) {
        throw std::invalid_argument(fmt::format(
            "mig-parted config: mig-configs.{}[{}].mig-devices: must be empty when mig-enabled is false", name, i));
      }
    }
  }
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "version" << YAML::Value << "v1";
  y << YAML::Key << "mig-configs" << YAML::Value;
  if (config.configs.empty()) {
    y << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  } else {
    y << YAML::BeginMap;
    for (const auto& [name, entries] : config.configs) {
      y << YAML::Key << name << YAML::Value;
      if (entries.empty()) {
        y << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        continue;
      }
      y << YAML::BeginSeq;
      for (const auto& e : entries) emit_entry(y, e);
      y << YAML::EndSeq;
    }
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  std::string text = std::string(y.c_str()) + "\n";
  MigPartedChecker c;
  c.with_lines = false;  // the lines of a text the caller never saw
  c.check(YAML::Load(text), nullptr);
  if (!c.errors.empty()) {
    std::string msg = "mig-parted config: " + c.errors.front();
    for (size_t i = 1; i < c.errors.size(); ++i) msg += "; " + c.errors[i];
    throw std::invalid_argument(msg);
  }
  return text;
}

std::vector<std::string> validate_mig_parted_config(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return {fmt::format("(document) (line {}): not valid YAML: {}", e.mark.line + 1, e.msg)};
  }
  return validate_mig_parted_config(root);
}

std::vector<std::string> validate_mig_parted_config(const YAML::Node& doc) {
  MigPartedChecker c;
  c.check(doc, nullptr);
  return c.errors;
}

MigProfileCounts parse_profile_counts(std::string_view text) {
  MigProfileCounts out;
  std::string_view rest = text;
  auto fail = [&](std::string_view why) {
    throw std::invalid_argument(fmt::format("invalid MIG layout \"{}\": {}", text, why));
  };
  if (rest.empty()) fail("empty");
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("\"{}\" is not <profile>=<count>", item));
    const std::string profile(item.substr(0, eq));
    const std::string_view count = item.substr(eq + 1);
    if (!valid_mig_profile_format(profile)) fail(fmt::format("\"{}\" is not a MIG profile name", profile));
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

std::string check_mig_devices(const MigProfileCounts& counts, const MigGeometry* geo) {
  int instances = 0;
  int slices = 0;
  for (const auto& [profile, n] : counts) {
    if (!valid_mig_profile_format(profile)) return fmt::format("'{}' is not a MIG profile name", profile);
    if (n < 0) return fmt::format("{}: count {} is negative", profile, n);
    if (n > kMaxMigInstancesPerGpu) {
      return fmt::format("{} x {}: a GPU holds at most {} MIG instances", n, profile, kMaxMigInstancesPerGpu);
    }
    instances += n;
    slices += n * std::min(min_compute_slices(profile), 100);
  }
  if (instances > kMaxMigInstancesPerGpu) {
    return fmt::format("{} instances on one GPU; a GPU holds at most {}", instances, kMaxMigInstancesPerGpu);
  }
  if (slices > kMaxMigComputeSlices) {
    return fmt::format("the profiles take {} compute slices of one GPU; a GPU has at most {}", slices,
                       kMaxMigComputeSlices);
  }
  if (!geo) return "";
  MigProfileCounts nonzero;
  for (const auto& [profile, n] : counts) {
    const auto idx = geo->find(profile);
    if (!idx) {
      return fmt::format("'{}' is not a {} profile (profiles: {})", profile, geo->model_name, geo->profile_names());
    }
    if (n > 0) nonzero[geo->profile(*idx).name] += n;
  }
  const auto placed = find_placement(*geo, nonzero);
  if (!placed.ok()) return fmt::format("does not fit one {}: {}", geo->model_name, placed.reason);
  return "";
}

MigPartedConfig parse_mig_parted_config(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("mig-parted config (line {}): not valid YAML: {}", e.mark.line + 1, e.msg));
  }
  MigPartedChecker c;
  MigPartedConfig out;
  c.check(root, &out);
  if (!c.errors.empty()) {
    std::string msg = "invalid mig-parted config:";
    for (const auto& e : c.errors) msg += "\n  " + e;
    throw std::invalid_argument(msg);
  }
  return out;
}

}  // namespace gpupack
