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

std::optional<long long> as_int(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  static const std::regex re("^[+-]?[0-9]+$");
  if (!std::regex_match(n.Scalar(), re)) return std::nullopt;
  try {
    return std::stoll(n.Scalar());
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<bool> as_bool(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  bool b = false;
  if (!YAML::convert<bool>::decode(n, b)) return std::nullopt;
  return b;
}

struct Checker {
  std::vector<std::string> errors;
  void error(const std::string& path, const YAML::Node& n, const std::string& what) {
    errors.push_back(fmt::format("{}{}: {}", path, at(n), what));
  }

  void check_entry(const std::string& path, const YAML::Node& e, MigPartedEntry* out) {
    if (!e.IsMap()) {
      error(path, e, "an entry must be a map with devices, mig-enabled, mig-devices");
      return;
    }
    static const std::set<std::string> kKeys = {"device-filter", "devices", "mig-enabled", "mig-devices"};
    for (const auto& kv : e) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!kKeys.count(key)) {
        error(path, kv.first, fmt::format("unknown key '{}' (allowed: device-filter, devices, mig-enabled, mig-devices)", key));
      }
    }
    // device-filter: string or list of strings, each a PCI device+vendor id.
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
        if (!x.IsScalar() || !valid_pci_id(x.Scalar())) {
          error(path + ".device-filter", x,
                fmt::format("'{}' is not a PCI device id such as 0x20B010DE", x.IsScalar() ? x.Scalar() : "?"));
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
          error(path + ".devices", x,
                fmt::format("'{}' is not a GPU index", x.IsScalar() ? x.Scalar() : "?"));
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
    // mig-enabled: bool.
    const auto en = e["mig-enabled"];
    std::optional<bool> enabled;
    if (!en) {
      error(path, e, "missing required key 'mig-enabled'");
    } else if (!(enabled = as_bool(en))) {
      error(path + ".mig-enabled", en,
            fmt::format("'{}' is not a boolean", en.IsScalar() ? en.Scalar() : "?"));
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
    for (const auto& kv : md) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!valid_mig_profile_format(key)) {
        error(path + ".mig-devices", kv.first,
              fmt::format("'{}' is not a MIG profile name such as 1g.5gb or 1c.3g.20gb", key));
        continue;
      }
      const auto v = as_int(kv.second);
      if (!v || *v < 0 || *v > 64) {
        error(path + ".mig-devices." + key, kv.second,
              fmt::format("count '{}' is not a non-negative integer",
                          kv.second.IsScalar() ? kv.second.Scalar() : "?"));
        continue;
      }
      if (out) out->mig_devices[key] = static_cast<int>(*v);
    }
  }

  void check(const YAML::Node& root, MigPartedConfig* out) {
    if (!root.IsMap()) {
      error("(document)", root, "the top level must be a map with 'version' and 'mig-configs'");
      return;
    }
    for (const auto& kv : root) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (key != "version" && key != "mig-configs") {
        error(key, kv.first, "unknown top-level key (allowed: version, mig-configs)");
      }
    }
    const auto version = root["version"];
    if (!version) {
      error("version", root, "missing required key 'version'");
    } else if (!version.IsScalar() || version.Scalar() != "v1") {
      error("version", version,
            fmt::format("'{}' is not supported (only v1)", version.IsScalar() ? version.Scalar() : "?"));
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
  static const std::regex re(R"(^([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+me|\+me\.all|-me|\+gfx)?$)");
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
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "version" << YAML::Value << "v1";
  y << YAML::Key << "mig-configs" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, entries] : config.configs) {
    y << YAML::Key << name << YAML::Value << YAML::BeginSeq;
    for (const auto& e : entries) emit_entry(y, e);
    y << YAML::EndSeq;
  }
  y << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

std::vector<std::string> validate_mig_parted_config(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return {fmt::format("(document) (line {}): not valid YAML: {}", e.mark.line + 1, e.msg)};
  }
  Checker c;
  c.check(root, nullptr);
  return c.errors;
}

MigPartedConfig parse_mig_parted_config(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(
        fmt::format("mig-parted config (line {}): not valid YAML: {}", e.mark.line + 1, e.msg));
  }
  Checker c;
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
