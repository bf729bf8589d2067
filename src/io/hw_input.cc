#include "io/hw_input.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <limits>
#include <set>

#include "io/csv.h"
#include "io/input_error.h"
#include "io/openb.h"
#include "mig/mig_geometry.h"
#include "model/cluster_state.h"
#include "util/files.h"
#include "util/nesting.h"
#include "util/strings.h"

namespace gpupack {
namespace {

// YAML files only (CSV workloads go through CsvTable::read).
std::string slurp(const std::string& path) { return read_file_bounded(path, max_yaml_input_bytes()); }

// Error helper bound to a source name.
struct Src {
  std::string name;
  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    const int line = at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    throw InputError(fmt::format("{}:{}: {}", name, line, what));
  }
  template <typename T>
  T as(const YAML::Node& n, const std::string& key) const {
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, fmt::format("field '{}': bad value '{}'", key,
                          n.IsScalar() ? excerpt(n.Scalar()) : std::string("(not a scalar)")));
    }
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) const {
    const int64_t v = as<int64_t>(n, key);
    if (v < lo || v > hi) fail(n, fmt::format("field '{}': {} is outside {}..{}", key, v, lo, hi));
    return v;
  }
  void only_keys(const YAML::Node& map, std::initializer_list<const char*> keys, const std::string& what) const {
    if (!map.IsMap()) fail(map, fmt::format("{} must be a map", what));
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      bool known = false;
      for (const char* x : keys) known |= k == x;
      if (!known) {
        std::string list;
        for (const char* x : keys) list += (list.empty() ? "" : ", ") + std::string(x);
        fail(kv.first, fmt::format("{}: unknown field '{}' (known: {})", what, excerpt(k), list));
      }
    }
  }
};

// Refuses flow collections nested deeper than kMaxInputDepth before yaml-cpp
// (which recurses per level) sees them; its own depth guard stops the rest.
YAML::Node load(const std::string& text, const std::string& source) {
  check_yaml_depth(text, source);
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // nesting by indentation, which the pre-scan does not measure
    throw InputError(fmt::format("{}:{}: YAML nested too deeply (the parser stops at {} recursion steps)", source,
                                 e.mark.line + 1, e.depth()));
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}: YAML syntax error: {}", source, e.mark.line + 1, error_text(e.msg)));
  }
}

// Per-GPU list or a single value for all GPUs.
template <typename F>
void per_gpu(const Src& src, const YAML::Node& v, int gpus, const std::string& key, F set) {
  if (!v) return;
  if (v.IsSequence()) {
    if (static_cast<int>(v.size()) != gpus)
      src.fail(v, fmt::format("field '{}': {} entries for {} GPUs", key, v.size(), gpus));
    for (int g = 0; g < gpus; ++g) set(g, v[static_cast<size_t>(g)]);
  } else {
    for (int g = 0; g < gpus; ++g) set(g, v);
  }
}

// "3g.40gb@4" (optionally with a trailing '*' = in use).
void parse_instances(const Src& src, const YAML::Node& list, const MigGeometry& geo, GpuSetup& gpu,
                     std::vector<bool>& in_use) {
  if (!list.IsSequence()) src.fail(list, "mig_layout: expected a list of 'profile@start' or 'dynamic'");
  gpu.mig_fixed_layout = true;
  for (const auto& item : list) {
    std::string text = src.as<std::string>(item, "mig_layout");
    bool busy = false;
    if (!text.empty() && text.back() == '*') {
      busy = true;
      text.pop_back();
    }
    const size_t at = text.find('@');
    if (at == std::string::npos) src.fail(item, fmt::format("mig_layout: '{}' is not 'profile@start'", excerpt(text)));
    const auto p = geo.find(text.substr(0, at));
    if (!p)
      src.fail(item, fmt::format("mig_layout: unknown {} profile '{}' (known: {})", geo.model_name,
                                 excerpt(text.substr(0, at)), geo.profile_names()));
    int start = -1;
    try {
      start = std::stoi(text.substr(at + 1));
    } catch (...) {
      src.fail(item, fmt::format("mig_layout: bad start in '{}'", excerpt(text)));
    }
    gpu.mig_layout.push_back({*p, start});
    in_use.push_back(busy);
  }
}

}  // namespace

HwCluster parse_hw_cluster(const std::string& text, const std::string& source) {
  const Src src{source};
  const YAML::Node root = load(text, source);
  if (!root.IsMap() || !root["node_pools"])
    throw InputError(fmt::format("{}: expected a map with 'node_pools'", source));
  src.only_keys(root, {"node_pools"}, "cluster");
  const YAML::Node pools = root["node_pools"];
  if (!pools.IsSequence() || pools.size() == 0) src.fail(pools, "node_pools must be a non-empty list");
  HwCluster out;
  for (const auto& pool : pools) {
    src.only_keys(pool,
                  {"name", "count", "model", "gpus", "cpu_milli", "memory_mib", "numa", "gpu_numa", "nvlink_domain",
                   "pcie_switch", "mode", "mps_replicas", "oversubscription", "mig_layout"},
                  "node pool");
    if (!pool["name"]) src.fail(pool, "node pool: missing 'name'");
    const std::string name = src.as<std::string>(pool["name"], "name");
    const int count = pool["count"] ? static_cast<int>(src.integer(pool["count"], "count", 1, 100000)) : 1;
    const int gpus = pool["gpus"] ? static_cast<int>(src.integer(pool["gpus"], "gpus", 0, kMaxGpusPerNode)) : 0;
    GpuModelId model = 0;
    if (gpus > 0) {
      if (!pool["model"]) src.fail(pool, fmt::format("node pool '{}': 'model' is required with GPUs", excerpt(name)));
      const std::string m = src.as<std::string>(pool["model"], "model");
      const auto id = GpuCatalog::builtin().find(m);
      if (!id)
        src.fail(pool["model"],
                 fmt::format("unknown GPU model '{}' (known: {})", excerpt(m), GpuCatalog::builtin().known_names()));
      model = *id;
    }
    if (!pool["cpu_milli"] || !pool["memory_mib"])
      src.fail(pool, fmt::format("node pool '{}': 'cpu_milli' and 'memory_mib' are required", excerpt(name)));
    NodeSpec base{name, src.integer(pool["cpu_milli"], "cpu_milli", 0, int64_t{1} << 40),
                  src.integer(pool["memory_mib"], "memory_mib", 0, int64_t{1} << 40), gpus, model};
    if (const YAML::Node numa = pool["numa"]) {
      if (!numa.IsSequence() || numa.size() == 0) src.fail(numa, "numa: expected a list of {cpu_milli, memory_mib}");
      int64_t cpu = 0, mem = 0;
      for (const auto& u : numa) {
        src.only_keys(u, {"cpu_milli", "memory_mib"}, "numa node");
        NumaSpec spec{src.integer(u["cpu_milli"], "cpu_milli", 0, int64_t{1} << 40),
                      src.integer(u["memory_mib"], "memory_mib", 0, int64_t{1} << 40)};
        cpu += spec.cpu_milli;
        mem += spec.memory_mib;
        base.numa.push_back(spec);
      }
      if (cpu != base.cpu_milli || mem != base.memory_mib)
        src.fail(numa, fmt::format("numa: nodes sum to {} cpu milli and {} MiB, the pool has {} and {}", cpu, mem,
                                   base.cpu_milli, base.memory_mib));
    }
    std::vector<std::vector<bool>> in_use(static_cast<size_t>(gpus));
    const bool any_hw = pool["gpu_numa"] || pool["nvlink_domain"] || pool["pcie_switch"] || pool["mode"] ||
                        pool["mig_layout"] || !base.numa.empty();
    if (any_hw && gpus > 0) {
      base.gpus.assign(static_cast<size_t>(gpus), GpuSetup{});
      const int numa_nodes = base.numa.empty() ? 1 : static_cast<int>(base.numa.size());
      per_gpu(src, pool["gpu_numa"], gpus, "gpu_numa", [&](int g, const YAML::Node& v) {
        base.gpus[g].numa = static_cast<int8_t>(src.integer(v, "gpu_numa", 0, numa_nodes - 1));
      });
      per_gpu(src, pool["nvlink_domain"], gpus, "nvlink_domain", [&](int g, const YAML::Node& v) {
        base.gpus[g].nvlink_domain = static_cast<int8_t>(src.integer(v, "nvlink_domain", -1, 127));
      });
      per_gpu(src, pool["pcie_switch"], gpus, "pcie_switch", [&](int g, const YAML::Node& v) {
        base.gpus[g].pcie_switch = static_cast<int8_t>(src.integer(v, "pcie_switch", -1, 127));
      });
      per_gpu(src, pool["mode"], gpus, "mode", [&](int g, const YAML::Node& v) {
        const std::string m = src.as<std::string>(v, "mode");
        if (!parse_gpu_mode(m, &base.gpus[g].mode))
          src.fail(v, fmt::format("mode: unknown '{}' (known: shared, exclusive, time-slice, mps, mig)", excerpt(m)));
      });
      const GpuModelSpec& spec = GpuCatalog::builtin().spec(model);
      for (int g = 0; g < gpus; ++g) {
        GpuSetup& s = base.gpus[static_cast<size_t>(g)];
        if (s.mode == GpuMode::kMps) {
          if (!pool["mps_replicas"])
            src.fail(pool, fmt::format("node pool '{}': MPS GPUs need 'mps_replicas'", excerpt(name)));
          s.mps_replicas =
              static_cast<int32_t>(src.integer(pool["mps_replicas"], "mps_replicas", 2, spec.mps_max_clients()));
        }
        if (s.mode == GpuMode::kTimeSlice && pool["oversubscription"]) {
          s.oversubscription = src.as<double>(pool["oversubscription"], "oversubscription");
          if (!(s.oversubscription >= 1.0 && s.oversubscription <= 64.0))
            src.fail(pool["oversubscription"], fmt::format("oversubscription {} is outside 1..64", s.oversubscription));
        }
        if (s.mode == GpuMode::kMig && !mig_geometry(model))
          src.fail(pool["mode"], fmt::format("node pool '{}': {} is not MIG-capable", excerpt(name), spec.name));
      }
      if (const YAML::Node layout = pool["mig_layout"]) {
        const MigGeometry* geo = mig_geometry(model);
        if (!geo) src.fail(layout, fmt::format("mig_layout: {} is not MIG-capable", spec.name));
        // "dynamic", one list for every MIG GPU, or a list per GPU.
        const bool per = layout.IsSequence() && layout.size() > 0 && layout[0].IsSequence();
        if (per && static_cast<int>(layout.size()) != gpus)
          src.fail(layout, fmt::format("mig_layout: {} lists for {} GPUs", layout.size(), gpus));
        for (int g = 0; g < gpus; ++g) {
          GpuSetup& s = base.gpus[static_cast<size_t>(g)];
          const YAML::Node item = per ? layout[static_cast<size_t>(g)] : layout;
          if (item.IsScalar()) {
            if (item.Scalar() != "dynamic")
              src.fail(item, fmt::format("mig_layout: '{}' is not 'dynamic' or a list", excerpt(item.Scalar())));
            continue;
          }
          if (s.mode != GpuMode::kMig) {
            if (per && item.size() > 0) src.fail(item, fmt::format("mig_layout: GPU {} is not in MIG mode", g));
            continue;
          }
          parse_instances(src, item, *geo, s, in_use[static_cast<size_t>(g)]);
        }
      }
    }
    for (int i = 0; i < count; ++i) {
      NodeSpec n = base;
      n.name = count == 1 ? name : fmt::format("{}-{}", name, i);
      out.nodes.push_back(std::move(n));
      out.mig_in_use.push_back(in_use);
    }
  }
  // Validate each node as the state will (layout overlaps, NUMA ids...).
  try {
    ClusterState check(out.nodes);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  return out;
}

HwCluster read_hw_cluster(const std::string& path) { return parse_hw_cluster(slurp(path), path); }

namespace {

// Applies one hardware field (by name) to a request; false if the name is
// not a hardware field. Throws std::invalid_argument on a bad value.
bool set_hw_field(Request& r, const std::string& key, const std::string& value) {
  auto integer = [&](int64_t lo, int64_t hi) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (...) {
      used = 0;
    }
    if (value.empty() || used != value.size()) throw std::invalid_argument("not an integer");
    if (v < lo || v > hi) throw std::invalid_argument(fmt::format("outside {}..{}", lo, hi));
    return v;
  };
  auto boolean = [&] {
    if (value == "true" || value == "1" || value == "yes") return true;
    if (value == "false" || value == "0" || value == "no" || value.empty()) return false;
    throw std::invalid_argument("not a boolean (true/false)");
  };
  if (key == "gpu_memory_mib")
    r.gpu_memory_mib = value.empty() ? 0 : integer(0, int64_t{1} << 30);
  else if (key == "bandwidth_milli")
    r.bandwidth_milli = value.empty() ? 0 : static_cast<int32_t>(integer(0, 1000));
  else if (key == "l2_milli")
    r.l2_milli = value.empty() ? 0 : static_cast<int32_t>(integer(0, 1000));
  else if (key == "mig_profile") {
    // A profile no GPU model has would make every such pod fail: refuse it here.
    std::set<std::string> names;
    for (const MigGeometry& g : all_mig_geometries())
      for (const MigProfile& p : g.profiles) names.insert(p.name);
    if (!value.empty() && !names.count(value))
      throw std::invalid_argument(
          fmt::format("no GPU model has MIG profile \"{}\" (known: {})", excerpt(value), fmt::join(names, ", ")));
    r.mig_profile = value;
  } else if (key == "mig_min_sm")
    r.mig_min_sm = value.empty() ? 0 : static_cast<int32_t>(integer(0, 1000));
  else if (key == "class") {
    if (!parse_workload_class(value, &r.workload_class))
      throw std::invalid_argument("unknown class (latency-sensitive, training, batch-inference, bursty-inference)");
  } else if (key == "modes") {
    r.modes = 0;
    size_t start = 0;
    while (!value.empty() && start <= value.size()) {
      size_t end = value.find('|', start);
      if (end == std::string::npos) end = value.size();
      GpuMode m;
      if (!parse_gpu_mode(value.substr(start, end - start), &m))
        throw std::invalid_argument("unknown mode (shared, exclusive, time-slice, mps, mig)");
      r.modes |= mode_bit(m);
      start = end + 1;
    }
  } else if (key == "gpu_scope") {
    if (!parse_gpu_scope(value, &r.gpu_scope))
      throw std::invalid_argument("unknown scope (any, nvlink, pcie-switch, numa)");
  } else if (key == "scope_required")
    r.scope_required = boolean();
  else if (key == "numa_aligned")
    r.numa_aligned = boolean();
  else
    return false;
  return true;
}

const char* kHwColumns[] = {"gpu_memory_mib", "bandwidth_milli", "l2_milli",  "mig_profile",    "mig_min_sm",
                            "class",          "modes",           "gpu_scope", "scope_required", "numa_aligned"};

Workload read_workload_csv(const std::string& path) {
  const CsvTable t = CsvTable::read(path);
  const int c_name = t.column("name"), c_cpu = t.column("cpu_milli"), c_mem = t.column("memory_mib"),
            c_num = t.column("num_gpu"), c_milli = t.column("gpu_milli");
  const auto c_spec = t.find_column("gpu_spec");
  std::vector<std::pair<std::string, int>> hw;
  for (const char* k : kHwColumns)
    if (auto c = t.find_column(k)) hw.emplace_back(k, *c);
  Workload w;
  for (const auto& row : t.rows()) {
    Request r;
    const std::string& name = t.field(row, c_name);
    if (name.empty()) t.fail(row, c_name, "empty pod name");
    r.cpu_milli = t.int_field(row, c_cpu, 0, std::numeric_limits<int32_t>::max());
    r.memory_mib = t.int_field(row, c_mem, 0, int64_t{1} << 40);
    r.gpu_count = static_cast<int32_t>(t.int_field(row, c_num, 0, kMaxGpusPerNode));
    r.gpu_milli = static_cast<int32_t>(t.int_field(row, c_milli, 0, kGpuMilliPerGpu));
    std::string spec;
    if (c_spec) {
      spec = t.field(row, *c_spec);
      if (!spec.empty()) {
        try {
          r.allowed_models = parse_model_list(spec);
        } catch (const std::invalid_argument& e) {
          t.fail(row, *c_spec, e.what());
        }
      }
    }
    for (const auto& [key, col] : hw) {
      try {
        set_hw_field(r, key, t.field(row, col));
      } catch (const std::invalid_argument& e) {
        t.fail(row, col, e.what());
      }
    }
    if (std::string err = r.validate(); !err.empty()) t.fail(row, c_name, err);
    w.names.push_back(name);
    w.requests.push_back(r);
    w.model_keys.push_back(spec);
  }
  return w;
}

}  // namespace

Workload parse_hw_workload_yaml(const std::string& text, const std::string& source) {
  const Src src{source};
  const YAML::Node root = load(text, source);
  if (!root.IsMap() || !root["pods"] || !root["pods"].IsSequence())
    throw InputError(fmt::format("{}: expected a map with a 'pods' list", source));
  Workload w;
  for (const auto& pod : root["pods"]) {
    src.only_keys(pod,
                  {"name", "count", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "gpu_memory_mib",
                   "bandwidth_milli", "l2_milli", "mig_profile", "mig_min_sm", "class", "modes", "gpu_scope",
                   "scope_required", "numa_aligned"},
                  "pod");
    if (!pod["name"]) src.fail(pod, "pod: missing 'name'");
    const std::string name = src.as<std::string>(pod["name"], "name");
    Request r;
    r.cpu_milli =
        pod["cpu_milli"] ? src.integer(pod["cpu_milli"], "cpu_milli", 0, std::numeric_limits<int32_t>::max()) : 0;
    r.memory_mib = pod["memory_mib"] ? src.integer(pod["memory_mib"], "memory_mib", 0, int64_t{1} << 40) : 0;
    r.gpu_count = pod["num_gpu"] ? static_cast<int32_t>(src.integer(pod["num_gpu"], "num_gpu", 0, kMaxGpusPerNode)) : 0;
    r.gpu_milli = pod["gpu_milli"] ? static_cast<int32_t>(src.integer(pod["gpu_milli"], "gpu_milli", 0, 1000))
                                   : (r.gpu_count > 0 ? kGpuMilliPerGpu : 0);
    std::string spec;
    if (pod["gpu_spec"]) {
      spec = src.as<std::string>(pod["gpu_spec"], "gpu_spec");
      try {
        r.allowed_models = parse_model_list(spec);
      } catch (const std::invalid_argument& e) {
        src.fail(pod["gpu_spec"], e.what());
      }
    }
    for (const char* key : kHwColumns) {
      const YAML::Node v = pod[key];
      if (!v) continue;
      std::string value;
      if (v.IsSequence()) {  // modes: [mig, mps]
        for (const auto& x : v) value += (value.empty() ? "" : "|") + src.as<std::string>(x, key);
      } else {
        value = src.as<std::string>(v, key);
      }
      try {
        set_hw_field(r, key, value);
      } catch (const std::invalid_argument& e) {
        src.fail(v, fmt::format("field '{}': {} (value '{}')", excerpt(key), error_text(e.what()), excerpt(value)));
      }
    }
    if (std::string err = r.validate(); !err.empty()) src.fail(pod, fmt::format("pod '{}': {}", excerpt(name), err));
    const int count = pod["count"] ? static_cast<int>(src.integer(pod["count"], "count", 1, 1000000)) : 1;
    for (int i = 0; i < count; ++i) {
      w.names.push_back(count == 1 ? name : fmt::format("{}-{}", name, i));
      w.requests.push_back(r);
      w.model_keys.push_back(spec);
    }
  }
  return w;
}

Workload read_hw_workload(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".yaml" || ext == ".yml") return parse_hw_workload_yaml(slurp(path), path);
  if (ext == ".csv") return read_workload_csv(path);
  throw InputError(fmt::format("{}: workload files end in .csv, .yaml or .yml", path));
}

std::vector<MigGpuInventory> mig_inventory(const HwCluster& c) {
  std::vector<MigGpuInventory> out;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const NodeSpec& n = c.nodes[i];
    if (n.gpu_count == 0 || !mig_geometry(n.gpu_model)) continue;
    for (int g = 0; g < n.gpu_count; ++g) {
      MigGpuInventory inv;
      inv.node = n.name;
      inv.gpu_index = g;
      inv.model = n.gpu_model;
      const GpuSetup* s = n.gpus.empty() ? nullptr : &n.gpus[static_cast<size_t>(g)];
      inv.mig_enabled = s && s->mode == GpuMode::kMig;
      inv.dynamic_layout = inv.mig_enabled && !s->mig_fixed_layout;
      if (inv.mig_enabled) {
        inv.layout = s->mig_layout;
        inv.in_use = c.mig_in_use[i][static_cast<size_t>(g)];
      }
      out.push_back(std::move(inv));
    }
  }
  return out;
}

void apply_mig_plan(HwCluster& c, const MigRepartitionPlan& plan) {
  for (const MigGpuPlan& g : plan.gpus) {
    if (!g.changed) continue;
    size_t i = 0;
    while (i < c.nodes.size() && c.nodes[i].name != g.node) ++i;
    if (i == c.nodes.size())
      throw std::invalid_argument(fmt::format("plan names node '{}', not in the cluster", g.node));
    NodeSpec& n = c.nodes[i];
    if (g.gpu_index < 0 || g.gpu_index >= n.gpu_count)
      throw std::invalid_argument(
          fmt::format("plan names GPU {} of node '{}', which has {}", g.gpu_index, g.node, n.gpu_count));
    if (n.gpus.empty()) n.gpus.assign(static_cast<size_t>(n.gpu_count), GpuSetup{});
    if (c.mig_in_use[i].size() < static_cast<size_t>(n.gpu_count))
      c.mig_in_use[i].resize(static_cast<size_t>(n.gpu_count));
    GpuSetup& s = n.gpus[static_cast<size_t>(g.gpu_index)];
    s.mig_layout.clear();
    s.mig_fixed_layout = false;
    s.mode = g.mig_enabled_after ? GpuMode::kMig : GpuMode::kShared;
    if (g.mig_enabled_after) {
      s.mig_fixed_layout = true;
      s.mig_layout = g.after.instances();
    }
    c.mig_in_use[i][static_cast<size_t>(g.gpu_index)].assign(s.mig_layout.size(), false);
  }
}

MigDemand read_mig_demand(const std::string& path) {
  const Src src{path};
  const YAML::Node root = load(slurp(path), path);
  if (!root.IsMap() || !root["demand"] || !root["demand"].IsMap())
    throw InputError(fmt::format("{}: expected a map with 'demand: {{model: {{profile: count}}}}'", path));
  MigDemand d;
  for (const auto& m : root["demand"]) {
    const std::string model = m.first.Scalar();
    const MigGeometry* geo = mig_geometry(model);
    if (!geo) src.fail(m.first, fmt::format("'{}' is not a MIG-capable GPU model", excerpt(model)));
    if (!m.second.IsMap())
      src.fail(m.second, fmt::format("demand for {}: expected {{profile: count}}", excerpt(model)));
    for (const auto& p : m.second) {
      const std::string profile = p.first.Scalar();
      const auto idx = geo->find(profile);
      if (!idx)
        src.fail(p.first, fmt::format("unknown {} profile '{}' (known: {})", geo->model_name, excerpt(profile),
                                      geo->profile_names()));
      d[geo->model][geo->profile(*idx).name] += static_cast<int>(src.integer(p.second, profile, 0, 100000));
    }
  }
  return d;
}

}  // namespace gpupack
