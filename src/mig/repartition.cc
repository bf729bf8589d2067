#include "mig/repartition.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpupack {
namespace {

using Supply = std::array<int, kMaxMigProfiles>;

std::string gpu_name(const MigGpuInventory& g) { return fmt::format("{} GPU {}", g.node, g.gpu_index); }

const MigGeometry& geometry_of(GpuModelId model, const std::string& who) {
  const MigGeometry* geo = mig_geometry(model);
  if (!geo) {
    const auto& cat = GpuCatalog::builtin();
    const std::string name = model < cat.size() ? cat.spec(model).name : fmt::format("model id {}", model);
    throw std::invalid_argument(fmt::format("{}: {} is not a MIG-capable model", who, name));
  }
  return *geo;
}

int served(const Supply& supply, const Supply& want, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += std::min(supply[i], want[i]);
  return s;
}

int served_slices(const MigGeometry& geo, const Supply& supply, const Supply& want) {
  int s = 0;
  for (int i = 0; i < geo.size(); ++i) s += std::min(supply[i], want[i]) * geo.profile(i).memory_slices;
  return s;
}

int memory_slices_of(const MigGeometry& geo, const MigCountVector& v) {
  int m = 0;
  for (int i = 0; i < geo.size(); ++i) m += v[i] * geo.profile(i).memory_slices;
  return m;
}

// FNV-1a, for short content-derived config names.
uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// Layouts worth giving a GPU: only demanded profiles, at most the demand
// (a subset of a feasible layout is feasible, so nothing better is lost).
std::vector<MigCountVector> useful_layouts(const MigGeometry& geo, const Supply& want) {
  std::vector<MigCountVector> out;
  for (const auto& lay : feasible_layouts(geo)) {
    bool ok = true;
    for (int i = 0; i < geo.size() && ok; ++i) ok = lay[i] <= want[i];
    if (ok) out.push_back(lay);
  }
  return out;
}

// Exact plan by dynamic programming over the idle GPUs (grouped by node, in
// input order). State: supply of each profile capped at its demand, plus
// whether the current node already has a change. Value: (GPUs changed,
// nodes changed), minimised. At the end the state serving the most
// instances, then the most memory slices, then the cheapest, wins. nullopt
// when the number of states exceeds max_states.
// Per idle GPU: what changing it costs.
struct ChangeKind {
  bool free = false;         // a dynamic-layout GPU: no reconfiguration
  bool mode_switch = false;  // MIG is off now
};

std::optional<std::vector<MigCountVector>> plan_exact(const MigGeometry& geo, const Supply& want, const Supply& base,
                                                      const std::vector<MigCountVector>& current,
                                                      const std::vector<std::string>& nodes,
                                                      const std::vector<ChangeKind>& kinds, size_t max_states) {
  const int n = geo.size();
  // Upper bound on the states of one layer: give up at once when even one
  // layer could exceed the budget.
  double bound = 2;
  for (int i = 0; i < n; ++i) bound *= want[i] + 1;
  if (bound > static_cast<double>(max_states)) return std::nullopt;
  const auto layouts = useful_layouts(geo, want);
  using Key = std::pair<MigCountVector, bool>;
  struct Entry {
    std::array<int, 3> cost;  // GPUs changed, MIG mode switches, nodes changed
    int parent;               // index in the previous layer
    int choice;               // -1 keep, else index into layouts
  };
  auto cap = [&](MigCountVector v) {
    for (int i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(std::min<int>(v[i], want[i]));
    return v;
  };
  MigCountVector start{};
  for (int i = 0; i < n; ++i) start[i] = static_cast<uint8_t>(std::clamp(base[i], 0, want[i]));
  std::vector<std::vector<Key>> keys{{{start, false}}};
  std::vector<std::vector<Entry>> layers{{{{0, 0, 0}, -1, -1}}};
  size_t total_states = 1;
  for (size_t g = 0; g < current.size(); ++g) {
    const bool new_node = g == 0 || nodes[g] != nodes[g - 1];
    std::map<Key, int> index;
    std::vector<Key> next_keys;
    std::vector<Entry> next;
    auto relax = [&](const Key& key, Entry e) {
      auto [it, fresh] = index.emplace(key, static_cast<int>(next.size()));
      if (fresh) {
        next_keys.push_back(key);
        next.push_back(e);
      } else if (e.cost < next[it->second].cost) {
        next[it->second] = e;
      }
    };
    const auto& prev_keys = keys.back();
    const auto& prev = layers.back();
    for (size_t s = 0; s < prev.size(); ++s) {
      const auto& [supply, touched_before] = prev_keys[s];
      const bool touched = touched_before && !new_node;
      MigCountVector kept = supply;
      for (int i = 0; i < n; ++i) kept[i] = static_cast<uint8_t>(std::min(255, kept[i] + current[g][i]));
      relax({cap(kept), touched}, {prev[s].cost, static_cast<int>(s), -1});
      for (size_t l = 0; l < layouts.size(); ++l) {
        if (layouts[l] == current[g]) continue;
        MigCountVector v = supply;
        for (int i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(std::min(255, v[i] + layouts[l][i]));
        if (kinds[g].free) {
          relax({cap(v), touched}, {prev[s].cost, static_cast<int>(s), static_cast<int>(l)});
          continue;
        }
        const std::array<int, 3> cost{prev[s].cost[0] + 1, prev[s].cost[1] + (kinds[g].mode_switch ? 1 : 0),
                                      prev[s].cost[2] + (touched ? 0 : 1)};
        relax({cap(v), true}, {cost, static_cast<int>(s), static_cast<int>(l)});
      }
    }
    total_states += next.size();
    if (total_states > max_states) return std::nullopt;
    keys.push_back(std::move(next_keys));
    layers.push_back(std::move(next));
  }
  // Best final state.
  int best = 0;
  auto rank = [&](int s) {
    const auto& v = keys.back()[s].first;
    int served = 0, slices = 0;
    for (int i = 0; i < n; ++i) {
      served += v[i];
      slices += v[i] * geo.profile(i).memory_slices;
    }
    const auto& c = layers.back()[s].cost;
    return std::tuple(served, slices, -c[0], -c[1], -c[2]);
  };
  for (int s = 1; s < static_cast<int>(layers.back().size()); ++s) {
    if (rank(s) > rank(best)) best = s;
  }
  std::vector<MigCountVector> out = current;
  for (size_t g = current.size(); g-- > 0;) {
    const Entry& e = layers[g + 1][best];
    if (e.choice >= 0) out[g] = layouts[e.choice];
    best = e.parent;
  }
  return out;
}

// Greedy fallback for plans too large for plan_exact: repeatedly give the
// idle GPU the layout that serves the most still-unmet instances (ties: more
// memory slices served, fewer slices partitioned now, a node already being
// changed, then the earlier GPU and layout).
std::vector<MigCountVector> plan_greedy(const MigGeometry& geo, const Supply& want, const Supply& base,
                                        const std::vector<MigCountVector>& current,
                                        const std::vector<std::string>& nodes, const std::vector<ChangeKind>& kinds) {
  const int n = geo.size();
  const auto layouts = useful_layouts(geo, want);
  std::vector<MigCountVector> out = current;
  std::vector<bool> changed(current.size(), false);
  std::set<std::string> changed_nodes;
  Supply supply = base;
  for (const auto& cur : current) {
    for (int i = 0; i < n; ++i) supply[i] += cur[i];
  }
  while (true) {
    using Score = std::tuple<int, int, int, int, int, int>;
    std::optional<Score> best;
    size_t best_gpu = 0;
    const MigCountVector* best_layout = nullptr;
    std::set<std::tuple<MigCountVector, bool, bool>> tried;  // equal GPUs are interchangeable
    const int now = served(supply, want, n);
    const int now_slices = served_slices(geo, supply, want);
    for (size_t k = 0; k < current.size(); ++k) {
      if (changed[k]) continue;
      const MigCountVector& cur = current[k];
      const bool node_busy = changed_nodes.count(nodes[k]) > 0;
      if (!kinds[k].free && !tried.insert({cur, node_busy, kinds[k].mode_switch}).second) continue;
      for (const auto& lay : layouts) {
        if (lay == cur) continue;
        Supply next = supply;
        for (int i = 0; i < n; ++i) next[i] += lay[i] - cur[i];
        const int gain = served(next, want, n) - now;
        if (gain <= 0) continue;
        const Score score{gain,
                          kinds[k].free ? 1 : 0,
                          kinds[k].mode_switch ? 0 : 1,
                          served_slices(geo, next, want) - now_slices,
                          -memory_slices_of(geo, cur),
                          node_busy ? 1 : 0};
        if (!best || score > *best) {
          best = score;
          best_gpu = k;
          best_layout = &lay;
        }
      }
    }
    if (!best) break;
    if (!kinds[best_gpu].free) changed_nodes.insert(nodes[best_gpu]);
    for (int i = 0; i < n; ++i) supply[i] += (*best_layout)[i] - current[best_gpu][i];
    changed[best_gpu] = true;
    out[best_gpu] = *best_layout;
  }
  return out;
}

}  // namespace

bool MigGpuInventory::idle() const {
  return std::none_of(in_use.begin(), in_use.end(), [](bool b) { return b; });
}

MigRepartitionPlan plan_mig_repartition(const std::vector<MigGpuInventory>& gpus, const MigDemand& demand,
                                        size_t max_exact_states) {
  MigRepartitionPlan plan;
  plan.method = "exact";
  // --- check the input and build the current states ---
  std::set<std::pair<std::string, int>> seen;
  for (const auto& g : gpus) {
    const std::string who = gpu_name(g);
    if (!seen.insert({g.node, g.gpu_index}).second) {
      throw std::invalid_argument(fmt::format("{} is listed twice", who));
    }
    const MigGeometry& geo = geometry_of(g.model, who);
    if (!g.in_use.empty() && g.in_use.size() != g.layout.size()) {
      throw std::invalid_argument(
          fmt::format("{}: in_use has {} entries for {} instances", who, g.in_use.size(), g.layout.size()));
    }
    if (!g.mig_enabled && !g.layout.empty()) {
      throw std::invalid_argument(fmt::format("{}: MIG is disabled but instances are listed", who));
    }
    auto built = build_layout(geo, g.layout);
    if (!built.ok()) throw std::invalid_argument(fmt::format("{}: current layout: {}", who, built.reason));
    plan.gpus.push_back({g.node, g.gpu_index, g.model, false, false, g.mig_enabled, *built.state, *built.state});
  }
  for (const auto& [model, counts] : demand) {
    const MigGeometry& geo = geometry_of(model, "demand");
    (void)count_vector(geo, counts);  // throws on an unknown profile
  }

  // --- per model: free supply, then new layouts for idle GPUs ---
  for (const auto& [model, counts] : demand) {
    const MigGeometry& geo = *mig_geometry(model);
    const int n = geo.size();
    const MigCountVector want_v = count_vector(geo, counts);
    Supply want{};
    for (int i = 0; i < n; ++i) want[i] = want_v[i];

    Supply supply{};
    std::vector<size_t> candidates;  // idle GPUs of this model
    for (size_t k = 0; k < gpus.size(); ++k) {
      const auto& g = gpus[k];
      if (g.model != model) continue;
      for (size_t j = 0; j < g.layout.size(); ++j) {
        if (g.in_use.empty() || !g.in_use[j]) ++supply[g.layout[j].profile];
      }
      if (g.idle()) candidates.push_back(k);
    }
    auto unmet_of = [&](const Supply& s) {
      MigCountVector u{};
      for (int i = 0; i < n; ++i) u[i] = static_cast<uint8_t>(std::max(0, want[i] - s[i]));
      return counts_by_name(geo, u);
    };
    if (auto u = unmet_of(supply); !u.empty()) plan.unmet_before[model] = u;

    // Group the candidates by node (stable: input order within a node).
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](size_t a, size_t b) { return gpus[a].node < gpus[b].node; });
    std::vector<MigCountVector> current;  // per candidate
    std::vector<std::string> nodes;
    std::vector<ChangeKind> kinds;
    for (size_t k : candidates) {
      current.push_back(count_vector(plan.gpus[k].before));
      nodes.push_back(gpus[k].node);
      kinds.push_back({gpus[k].mig_enabled && gpus[k].dynamic_layout, !gpus[k].mig_enabled});
    }
    Supply base = supply;  // free instances on busy GPUs only
    for (const auto& cur : current) {
      for (int i = 0; i < n; ++i) base[i] -= cur[i];
    }
    auto target = plan_exact(geo, want, base, current, nodes, kinds, max_exact_states);
    if (!target) {
      target = plan_greedy(geo, want, base, current, nodes, kinds);
      plan.method = "greedy";
    }

    // Trim instances that serve nothing from changed GPUs, last GPU first;
    // a GPU trimmed back to its current counts stays unchanged.
    Supply total = base;
    for (const auto& t : *target) {
      for (int i = 0; i < n; ++i) total[i] += t[i];
    }
    for (size_t c = target->size(); c-- > 0;) {
      MigCountVector& t = (*target)[c];
      if (t == current[c]) continue;
      for (int i = 0; i < n; ++i) {
        const int surplus = std::min<int>(std::max(0, total[i] - want[i]), t[i]);
        t[i] = static_cast<uint8_t>(t[i] - surplus);
        total[i] -= surplus;
      }
      if (t == current[c]) continue;
      auto placed = find_placement(geo, t);
      if (!placed.ok()) throw std::logic_error("feasible layout without placement: " + placed.reason);
      MigGpuPlan& g = plan.gpus[candidates[c]];
      g.after = *placed.state;
      g.mig_enabled_after = true;
      (kinds[c].free ? g.on_demand : g.changed) = true;
    }
    supply = total;
    if (auto u = unmet_of(supply); !u.empty()) plan.unmet_after[model] = u;
  }

  // --- mig-parted config and node labels ---
  std::map<std::string, std::vector<size_t>> by_node;
  for (size_t k = 0; k < plan.gpus.size(); ++k) {
    by_node[plan.gpus[k].node].push_back(k);
    if (plan.gpus[k].changed) ++plan.changed_gpus;
  }
  for (const auto& [node, members] : by_node) {
    if (std::none_of(members.begin(), members.end(), [&](size_t k) { return plan.gpus[k].changed; })) continue;
    // Group the node's GPUs by what they should hold: one entry per group.
    std::map<std::pair<bool, MigProfileCounts>, std::vector<int>> groups;
    for (size_t k : members) {
      const auto& g = plan.gpus[k];
      if (gpus[k].dynamic_layout && gpus[k].mig_enabled) continue;  // its instances are not mig-parted's
      groups[{g.mig_enabled_after, counts_by_name(g.after)}].push_back(g.gpu_index);
    }
    std::vector<MigPartedEntry> entries;
    std::string canonical;
    for (auto& [key, devices] : groups) {
      std::sort(devices.begin(), devices.end());
      MigPartedEntry e;
      e.devices = devices;
      e.mig_enabled = key.first;
      if (e.mig_enabled) e.mig_devices = key.second;
      canonical += fmt::format("{}|{}|", fmt::join(devices, ","), e.mig_enabled);
      for (const auto& [p, c] : e.mig_devices) canonical += fmt::format("{}={};", p, c);
      entries.push_back(std::move(e));
    }
    // Nodes with the same plan share one config; the name is a valid label value.
    const std::string name = fmt::format("gpupack-{:08x}", fnv1a(canonical));
    plan.config.configs[name] = std::move(entries);
    plan.node_labels[node] = name;
  }
  return plan;
}

std::vector<MigGpuState> apply_mig_parted_config(const std::vector<MigGpuInventory>& gpus, std::string_view yaml,
                                                 const std::map<std::string, std::string>& node_labels) {
  const MigPartedConfig config = parse_mig_parted_config(yaml);
  std::vector<MigGpuState> out;
  for (const auto& g : gpus) {
    const std::string who = gpu_name(g);
    const MigGeometry& geo = geometry_of(g.model, who);
    auto current = build_layout(geo, g.layout);
    if (!current.ok()) throw std::invalid_argument(fmt::format("{}: current layout: {}", who, current.reason));
    MigGpuState state = *current.state;
    const auto label = node_labels.find(g.node);
    if (label != node_labels.end()) {
      const auto cfg = config.configs.find(label->second);
      if (cfg == config.configs.end()) {
        throw std::invalid_argument(
            fmt::format("node {}: label {}={} names no config in the file", g.node, kMigConfigLabel, label->second));
      }
      for (const auto& entry : cfg->second) {
        if (!entry.selects(g.gpu_index, geo.pci_device_ids)) continue;
        const MigProfileCounts want = entry.mig_enabled ? entry.mig_devices : MigProfileCounts{};
        MigProfileCounts nonzero;
        for (const auto& [p, c] : want) {
          const auto idx = geo.find(p);
          if (!idx) {
            throw std::invalid_argument(
                fmt::format("{}: config {}: profile '{}' is not a {} profile", who, label->second, p, geo.model_name));
          }
          if (c > 0) nonzero[geo.profile(*idx).name] += c;
        }
        if (nonzero != counts_by_name(state)) {
          auto placed = find_placement(geo, nonzero);
          if (!placed.ok()) {
            throw std::invalid_argument(fmt::format("{}: config {}: {}", who, label->second, placed.reason));
          }
          state = *placed.state;
        }
        break;  // the first selecting entry applies
      }
    }
    out.push_back(state);
  }
  return out;
}

}  // namespace gpupack
