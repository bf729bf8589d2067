#include "defrag/bound_lagrangian.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "sched/filter.h"

namespace gpupack {

namespace {

constexpr double kMilliPerCore = 1000;  // multipliers: per core and per GiB
constexpr double kMibPerGib = 1024;
// A node's cores are kept as a constraint only while its table of net
// cores has at most this many states (else it is priced only).
constexpr int kMaxCoreStates = 512;

struct DemandClass {
  Request request;
  int count = 0;
  double value = 0;  // pending: GPU milli admitted
};

// One movable pod's part on one of its GPUs.
struct Departure {
  int cls = 0;
  int units = 0;  // milli it frees on this GPU, in units
  int share = 1;  // the pod's GPU count
};

struct NodeModel {
  std::vector<int> free_units;                // per GPU
  std::vector<std::vector<Departure>> moves;  // per GPU
  std::vector<int> cpu_only;                  // mover class of each movable CPU-only pod
  std::vector<int> pending, movers;           // classes the node may host
  int64_t cpu_free = 0, mem_free = 0, cpu_total = 0, mem_total = 0;
};

// Subgradient of the Lagrangian at some multipliers.
struct Gradient {
  std::vector<double> pending, movers, cpu, memory;
  double move = 0;
};

class LagrangianModel {
 public:
  LagrangianModel(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                  const PodMoveInfos& infos)
      : max_moves_(budget.max_moves) {
    check_bound_input(state, goal);
    // Classes in request order (the order of defrag/bound.h's rows).
    std::map<RequestClass, DemandClass> pending, movers;
    for (const PendingPod& p : goal.pending) {
      DemandClass& c = pending.try_emplace(request_class(p.request), DemandClass{p.request, 0, 0}).first->second;
      c.value = static_cast<double>(std::max<int64_t>(p.request.total_gpu_milli(), 1));
      ++c.count;
    }
    for (PodId p : state.bound_pods())
      if (!move_info(infos, p).immovable)
        ++movers.try_emplace(request_class(state.request(p)), DemandClass{state.request(p), 0, 0}).first->second.count;
    std::map<RequestClass, int> mover_index;
    for (auto& [key, c] : pending) pending_.push_back(c);
    for (auto& [key, c] : movers) {
      mover_index[key] = static_cast<int>(movers_.size());
      movers_.push_back(c);
    }
    // The size unit: every share, and the GPU, are multiples of it.
    int unit = kGpuMilliPerGpu;
    for (const DemandClass& c : pending_)
      if (c.request.is_gpu()) unit = std::gcd(unit, c.request.gpu_milli);
    for (PodId p : state.bound_pods())
      if (state.request(p).is_gpu()) unit = std::gcd(unit, state.assignment(p).gpu_milli);
    for (int n = 0; n < state.node_count(); ++n)
      for (int32_t f : state.gpu_free_milli(NodeId{n})) unit = std::gcd(unit, std::max(f, 0));
    unit_ = std::max(unit, 1);
    cap_ = kGpuMilliPerGpu / unit_;

    nodes_.resize(static_cast<size_t>(state.node_count()));
    for (int n = 0; n < state.node_count(); ++n) {
      const NodeId node{n};
      NodeModel& m = nodes_[static_cast<size_t>(n)];
      for (int32_t f : state.gpu_free_milli(node)) m.free_units.push_back(std::clamp(f, 0, kGpuMilliPerGpu) / unit_);
      m.moves.resize(m.free_units.size());
      m.cpu_free = state.cpu_free_milli(node);
      m.mem_free = state.memory_free_mib(node);
      m.cpu_total = state.cpu_total_milli(node);
      m.mem_total = state.memory_total_mib(node);
      for (size_t k = 0; k < pending_.size(); ++k)
        if (fits_empty_plain(state, node, pending_[k].request)) m.pending.push_back(static_cast<int>(k));
    }
    for (PodId p : state.bound_pods()) {
      if (move_info(infos, p).immovable) continue;
      const Request& r = state.request(p);
      const int cls = mover_index.at(request_class(r));
      const Assignment& a = state.assignment(p);
      NodeModel& m = nodes_[index(a.node)];
      if (!r.is_gpu()) {
        m.cpu_only.push_back(cls);
        continue;
      }
      for (size_t g = 0; g < m.moves.size(); ++g)
        if ((a.gpu_mask >> g) & 1u) m.moves[g].push_back({cls, a.gpu_milli / unit_, r.gpu_count});
    }
    for (int n = 0; n < state.node_count(); ++n)
      for (size_t k = 0; k < movers_.size(); ++k)
        if (fits_empty_plain(state, NodeId{n}, movers_[k].request))
          nodes_[static_cast<size_t>(n)].movers.push_back(static_cast<int>(k));
    scratch_.pending.assign(pending_.size(), 0);
    scratch_.movers.assign(movers_.size(), 0);
    scratch_.cpu.assign(nodes_.size(), 0);
    scratch_.memory.assign(nodes_.size(), 0);
  }

  LagrangeMultipliers zero() const {
    LagrangeMultipliers m;
    m.pending.assign(pending_.size(), 0);
    m.movers.assign(movers_.size(), 0);
    m.cpu.assign(nodes_.size(), 0);
    m.memory.assign(nodes_.size(), 0);
    return m;
  }

  void check(const LagrangeMultipliers& m) const {
    if (m.pending.size() != pending_.size() || m.movers.size() != movers_.size() || m.cpu.size() != nodes_.size() ||
        m.memory.size() != nodes_.size())
      throw std::invalid_argument("Lagrange multipliers do not match the problem's classes and nodes");
  }

  // The Lagrangian's value at `m`; with `g`, a subgradient there.
  double value(const LagrangeMultipliers& m, Gradient* g) const {
    const double beta = max_moves_ >= 0 ? std::max(0.0, m.move) : 0.0;
    long double total = 0;
    if (g) {
      g->pending.assign(pending_.size(), 0);
      g->movers.assign(movers_.size(), 0);
      g->cpu.assign(nodes_.size(), 0);
      g->memory.assign(nodes_.size(), 0);
      g->move = max_moves_ >= 0 ? max_moves_ : 0;
    }
    if (g)
      for (size_t k = 0; k < pending_.size(); ++k) g->pending[k] = pending_[k].count;
    total += shared_terms(m, beta);
    for (size_t n = 0; n < nodes_.size(); ++n) total += node_value(n, m, beta, g);
    return static_cast<double>(total);
  }

  int pending_classes() const { return static_cast<int>(pending_.size()); }
  int mover_classes() const { return static_cast<int>(movers_.size()); }
  int unit() const { return unit_; }
  int max_moves() const { return max_moves_; }

 private:
  // A GPU item: a pending (admit) or arriving (mover) pod's share of one GPU.
  struct Item {
    double value = 0;
    int cls = -1;
    bool pending = false;
  };

  double node_value(size_t n, const LagrangeMultipliers& m, double beta, Gradient* g) const {
    const NodeModel& node = nodes_[n];
    const double rho = std::max(0.0, m.cpu[n]) / kMilliPerCore;
    const double sigma = std::max(0.0, m.memory[n]) / kMibPerGib;
    double total = rho * static_cast<double>(node.cpu_free) + sigma * static_cast<double>(node.mem_free);
    if (g) {
      g->cpu[n] = static_cast<double>(node.cpu_free) / kMilliPerCore;
      g->memory[n] = static_cast<double>(node.mem_free) / kMibPerGib;
    }
    auto resources = [&](const Request& r) {
      return rho * static_cast<double>(r.cpu_milli) + sigma * static_cast<double>(r.memory_mib);
    };
    // Accounts `count` pods' worth (fractions for GPU shares) of a decision.
    auto admit = [&](int cls, double count) {
      const Request& r = pending_[static_cast<size_t>(cls)].request;
      g->pending[static_cast<size_t>(cls)] -= count;
      g->cpu[n] -= count * static_cast<double>(r.cpu_milli) / kMilliPerCore;
      g->memory[n] -= count * static_cast<double>(r.memory_mib) / kMibPerGib;
    };
    auto arrive = [&](int cls, double count) {
      const Request& r = movers_[static_cast<size_t>(cls)].request;
      g->movers[static_cast<size_t>(cls)] -= count;
      g->cpu[n] -= count * static_cast<double>(r.cpu_milli) / kMilliPerCore;
      g->memory[n] -= count * static_cast<double>(r.memory_mib) / kMibPerGib;
    };
    auto depart = [&](int cls, double count) {
      const Request& r = movers_[static_cast<size_t>(cls)].request;
      g->movers[static_cast<size_t>(cls)] += count;
      g->move -= count;
      g->cpu[n] += count * static_cast<double>(r.cpu_milli) / kMilliPerCore;
      g->memory[n] += count * static_cast<double>(r.memory_mib) / kMibPerGib;
    };

    // CPU-only pods: each decided alone.
    for (int cls : node.cpu_only) {
      const double v = m.movers[static_cast<size_t>(cls)] - beta + resources(movers_[static_cast<size_t>(cls)].request);
      if (v <= 0) continue;
      total += v;
      if (g) depart(cls, 1);
    }

    // The best item of each size (GPU shares), then the knapsack over sizes.
    std::vector<Item> best(static_cast<size_t>(cap_) + 1);
    for (int cls : node.pending) {
      const DemandClass& c = pending_[static_cast<size_t>(cls)];
      const double v = c.value - std::max(0.0, m.pending[static_cast<size_t>(cls)]) - resources(c.request);
      if (!c.request.is_gpu()) {
        if (v > 0) {
          const double count = arrivals_limit(node, c.request, c.count);
          total += v * count;
          if (g) admit(cls, count);
        }
        continue;
      }
      Item& slot = best[static_cast<size_t>(c.request.gpu_milli / unit_)];
      if (v / c.request.gpu_count > slot.value) slot = {v / c.request.gpu_count, cls, true};
    }
    for (int cls : node.movers) {
      const DemandClass& c = movers_[static_cast<size_t>(cls)];
      const double v = -m.movers[static_cast<size_t>(cls)] - resources(c.request);
      if (!c.request.is_gpu()) {
        if (v > 0) {
          const double count = arrivals_limit(node, c.request, c.count);
          total += v * count;
          if (g) arrive(cls, count);
        }
        continue;
      }
      Item& slot = best[static_cast<size_t>(c.request.gpu_milli / unit_)];
      if (v / c.request.gpu_count > slot.value) slot = {v / c.request.gpu_count, cls, false};
    }
    std::vector<int> sizes;
    for (int s = 1; s <= cap_; ++s)
      if (best[static_cast<size_t>(s)].value > 0) sizes.push_back(s);
    // fill[F]: the most a GPU's F free units hold; last[F]: the size of the
    // last item taken (0: fill[F] = fill[F - 1]).
    std::vector<double> fill(static_cast<size_t>(cap_) + 1, 0);
    std::vector<int> last(static_cast<size_t>(cap_) + 1, 0);
    for (int f = 1; f <= cap_; ++f) {
      fill[static_cast<size_t>(f)] = fill[static_cast<size_t>(f - 1)];
      for (int s : sizes) {
        if (s > f) break;
        const double v = best[static_cast<size_t>(s)].value + fill[static_cast<size_t>(f - s)];
        if (v > fill[static_cast<size_t>(f)]) fill[static_cast<size_t>(f)] = v, last[static_cast<size_t>(f)] = s;
      }
    }

    // Per GPU: which movable pods leave (0/1 knapsack over the units they
    // free), then the best fill of what is free.
    constexpr double kNone = -std::numeric_limits<double>::infinity();
    std::vector<double> leave;
    std::vector<char> took;
    for (size_t gi = 0; gi < node.free_units.size(); ++gi) {
      const std::vector<Departure>& deps = node.moves[gi];
      const int free = node.free_units[gi];
      const int room = cap_ - free;  // at most what the pods there hold
      leave.assign(static_cast<size_t>(room) + 1, kNone);
      leave[0] = 0;
      if (g) took.assign(deps.size() * (static_cast<size_t>(room) + 1), 0);
      for (size_t i = 0; i < deps.size(); ++i) {
        const Departure& d = deps[i];
        const double v =
            (m.movers[static_cast<size_t>(d.cls)] - beta + resources(movers_[static_cast<size_t>(d.cls)].request)) /
            d.share;
        for (int f = room - d.units; f >= 0; --f) {
          if (leave[static_cast<size_t>(f)] == kNone) continue;
          const double cand = leave[static_cast<size_t>(f)] + v;
          if (cand > leave[static_cast<size_t>(f + d.units)]) {
            leave[static_cast<size_t>(f + d.units)] = cand;
            if (g) took[i * (static_cast<size_t>(room) + 1) + static_cast<size_t>(f + d.units)] = 1;
          }
        }
      }
      int best_f = 0;
      double best_v = kNone;
      for (int f = 0; f <= room; ++f) {
        if (leave[static_cast<size_t>(f)] == kNone) continue;
        const double v = leave[static_cast<size_t>(f)] + fill[static_cast<size_t>(free + f)];
        if (v > best_v) best_v = v, best_f = f;
      }
      total += best_v;
      if (!g) continue;
      // The departures behind leave[best_f], last pod first.
      int f = best_f;
      for (size_t i = deps.size(); i-- > 0 && f > 0;) {
        if (!took[i * (static_cast<size_t>(room) + 1) + static_cast<size_t>(f)]) continue;
        depart(deps[i].cls, 1.0 / deps[i].share);
        f -= deps[i].units;
      }
      // The items behind fill[free + best_f].
      for (int u = free + best_f; u > 0;) {
        const int s = last[static_cast<size_t>(u)];
        if (s == 0) {
          --u;
          continue;
        }
        const Item& it = best[static_cast<size_t>(s)];
        const int share = it.pending ? pending_[static_cast<size_t>(it.cls)].request.gpu_count
                                     : movers_[static_cast<size_t>(it.cls)].request.gpu_count;
        if (it.pending)
          admit(it.cls, 1.0 / share);
        else
          arrive(it.cls, 1.0 / share);
        u -= s;
      }
    }
    return total;
  }

  // The node's term with its CPU also kept as a constraint, in whole cores
  // (GPU arrivals' cores rounded down per GPU share, departures' rounded up,
  // so every plan's node meets it; CPU-only arrivals left out of it, which
  // only relaxes it). Never above node_value(), equal to it where
  // node_value()'s own solution fits the node's CPU (a solution of the
  // larger problem that is feasible here is optimal here).
  double node_value_cores(size_t n, const LagrangeMultipliers& m, double beta) const {
    const NodeModel& node = nodes_[n];
    const double weak = node_value(n, m, beta, &scratch_);
    if (scratch_.cpu[n] >= -1e-9) return weak;  // its solution fits the node's CPU
    const double rho = std::max(0.0, m.cpu[n]) / kMilliPerCore;
    const double sigma = std::max(0.0, m.memory[n]) / kMibPerGib;
    auto resources = [&](const Request& r) {
      return rho * static_cast<double>(r.cpu_milli) + sigma * static_cast<double>(r.memory_mib);
    };
    auto floor_cores = [](double milli) { return static_cast<int>(std::floor(milli / kMilliPerCore + 1e-9)); };
    auto ceil_cores = [](double milli) { return static_cast<int>(std::ceil(milli / kMilliPerCore - 1e-9)); };
    auto leaving_cores = [&](const Departure& d) {
      return ceil_cores(static_cast<double>(movers_[static_cast<size_t>(d.cls)].request.cpu_milli) / d.share);
    };
    const int free_cores = floor_cores(static_cast<double>(node.cpu_free));
    int dep_cores = 0;
    for (const auto& deps : node.moves)
      for (const Departure& d : deps) dep_cores += leaving_cores(d);
    for (int cls : node.cpu_only) dep_cores += ceil_cores(movers_[static_cast<size_t>(cls)].request.cpu_milli);
    const int top = free_cores + dep_cores;                               // the most cores GPU arrivals can use
    if (free_cores < 0 || top + dep_cores > kMaxCoreStates) return weak;  // over-committed or too large

    double total = rho * static_cast<double>(node.cpu_free) + sigma * static_cast<double>(node.mem_free);
    constexpr double kNone = -std::numeric_limits<double>::infinity();
    // GPU arrival items per GPU share, the best per (size, cores).
    struct Arrival {
      int units, cores;
      double value;
    };
    std::vector<Arrival> items;
    auto offer = [&](const DemandClass& c, double v) {
      const Request& r = c.request;
      if (!r.is_gpu()) {
        if (v > 0) total += v * arrivals_limit(node, r, c.count);
        return;
      }
      const int units = r.gpu_milli / unit_;
      const int cores = floor_cores(static_cast<double>(r.cpu_milli) / r.gpu_count);
      v /= r.gpu_count;
      if (v <= 0 || cores > top) return;
      for (Arrival& it : items)
        if (it.units == units && it.cores == cores) {
          it.value = std::max(it.value, v);
          return;
        }
      items.push_back({units, cores, v});
    };
    for (int cls : node.pending) {
      const DemandClass& c = pending_[static_cast<size_t>(cls)];
      offer(c, c.value - std::max(0.0, m.pending[static_cast<size_t>(cls)]) - resources(c.request));
    }
    for (int cls : node.movers) {
      const DemandClass& c = movers_[static_cast<size_t>(cls)];
      offer(c, -m.movers[static_cast<size_t>(cls)] - resources(c.request));
    }
    // fill[u][a]: the most u free units hold with arrivals of at most a cores.
    const size_t width = static_cast<size_t>(top) + 1;
    std::vector<double> fill(static_cast<size_t>(cap_ + 1) * width, 0);
    auto at = [&](int u, int a) { return static_cast<size_t>(u) * width + static_cast<size_t>(a); };
    for (int u = 1; u <= cap_; ++u)
      for (int a = 0; a <= top; ++a) {
        double best = std::max(fill[at(u - 1, a)], a > 0 ? fill[at(u, a - 1)] : 0.0);
        for (const Arrival& it : items)
          if (it.units <= u && it.cores <= a) best = std::max(best, it.value + fill[at(u - it.units, a - it.cores)]);
        fill[at(u, a)] = best;
      }
    // One table per GPU (then per CPU-only movable pod) over the net cores
    // it uses (arrivals - departures), merged into `run` over the node's net
    // in [-dep_cores, top].
    const int lo = -dep_cores;
    const size_t states = static_cast<size_t>(top - lo) + 1;
    std::vector<double> run(states, kNone), next(states);
    run[static_cast<size_t>(-lo)] = 0;
    auto merge = [&](const std::vector<double>& table, int table_lo) {
      std::fill(next.begin(), next.end(), kNone);
      for (size_t i = 0; i < states; ++i) {
        if (run[i] == kNone) continue;
        for (size_t j = 0; j < table.size(); ++j) {
          const long k = static_cast<long>(i) + table_lo + static_cast<long>(j);
          if (table[j] == kNone || k < 0 || k >= static_cast<long>(states)) continue;
          next[static_cast<size_t>(k)] = std::max(next[static_cast<size_t>(k)], run[i] + table[j]);
        }
      }
      run.swap(next);
    };
    // Per GPU: departures as a 0/1 knapsack over (units, cores) freed, then
    // the best fill of what is free with the cores its arrivals use.
    std::vector<double> dep, table;
    for (size_t gi = 0; gi < node.free_units.size(); ++gi) {
      const std::vector<Departure>& deps = node.moves[gi];
      const int free = node.free_units[gi];
      const int room = cap_ - free;
      int dcores = 0;
      for (const Departure& d : deps) dcores += leaving_cores(d);
      const size_t dw = static_cast<size_t>(dcores) + 1;
      dep.assign(static_cast<size_t>(room + 1) * dw, kNone);
      dep[0] = 0;
      for (const Departure& d : deps) {
        const double v =
            (m.movers[static_cast<size_t>(d.cls)] - beta + resources(movers_[static_cast<size_t>(d.cls)].request)) /
            d.share;
        const int c = leaving_cores(d);
        for (int f = room - d.units; f >= 0; --f)
          for (int k = dcores - c; k >= 0; --k) {
            const double from = dep[static_cast<size_t>(f) * dw + static_cast<size_t>(k)];
            double& to = dep[static_cast<size_t>(f + d.units) * dw + static_cast<size_t>(k + c)];
            if (from != kNone) to = std::max(to, from + v);
          }
      }
      table.assign(static_cast<size_t>(top + dcores) + 1, kNone);  // net = a - k in [-dcores, top]
      for (int f = 0; f <= room; ++f)
        for (int k = 0; k <= dcores; ++k) {
          const double dv = dep[static_cast<size_t>(f) * dw + static_cast<size_t>(k)];
          if (dv == kNone) continue;
          for (int a = 0; a <= top; ++a) {
            double& t = table[static_cast<size_t>(a - k + dcores)];
            t = std::max(t, dv + fill[at(free + f, a)]);
          }
        }
      merge(table, -dcores);
    }
    for (int cls : node.cpu_only) {
      const Request& r = movers_[static_cast<size_t>(cls)].request;
      const int c = ceil_cores(r.cpu_milli);
      table.assign(static_cast<size_t>(c) + 1, kNone);
      table[static_cast<size_t>(c)] = 0;                                    // stays: net 0
      table[0] = m.movers[static_cast<size_t>(cls)] - beta + resources(r);  // leaves: net -c
      merge(table, -c);
    }
    // Every pod staying and nothing arriving (net 0) always fits.
    double best = kNone;
    for (int net = lo; net <= std::min(free_cores, top); ++net)
      best = std::max(best, run[static_cast<size_t>(net - lo)]);
    return std::min(weak, total + best);
  }

 public:
  // The Lagrangian's value with node_value_cores() per node.
  double value_cores(const LagrangeMultipliers& m) const {
    const double beta = max_moves_ >= 0 ? std::max(0.0, m.move) : 0.0;
    long double total = shared_terms(m, beta);
    for (size_t n = 0; n < nodes_.size(); ++n) total += node_value_cores(n, m, beta);
    return static_cast<double>(total);
  }

  // Lowers `m`'s CPU and memory prices node by node to the fractions of
  // them (0 to 1.5x) where value_cores() is lowest (a node's term depends on
  // its own prices only); returns value_cores() there.
  double polish_cores(LagrangeMultipliers& m) const {
    const double beta = max_moves_ >= 0 ? std::max(0.0, m.move) : 0.0;
    long double total = shared_terms(m, beta);
    LagrangeMultipliers trial = m;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      double best = node_value_cores(n, m, beta);
      const double cpu = m.cpu[n], memory = m.memory[n];
      for (double fc : {0.0, 0.25, 0.5, 1.0, 1.5})
        for (double fm : {0.0, 0.5, 1.0}) {
          trial.cpu[n] = fc * cpu;
          trial.memory[n] = fm * memory;
          const double v = node_value_cores(n, trial, beta);
          if (v < best) best = v, m.cpu[n] = trial.cpu[n], m.memory[n] = trial.memory[n];
        }
      trial.cpu[n] = m.cpu[n];
      trial.memory[n] = m.memory[n];
      total += best;
    }
    return static_cast<double>(total);
  }

 private:
  // The terms outside the nodes: the pending supply and the move budget, priced.
  long double shared_terms(const LagrangeMultipliers& m, double beta) const {
    long double total = beta * std::max(max_moves_, 0);
    for (size_t k = 0; k < pending_.size(); ++k) total += std::max(0.0, m.pending[k]) * pending_[k].count;
    return total;
  }

  // Arrivals of a CPU-only class on a node: its supply, or what the node holds when empty.
  double arrivals_limit(const NodeModel& node, const Request& r, int supply) const {
    double limit = supply;
    if (r.cpu_milli > 0) limit = std::min(limit, std::floor(static_cast<double>(node.cpu_total / r.cpu_milli)));
    if (r.memory_mib > 0) limit = std::min(limit, std::floor(static_cast<double>(node.mem_total / r.memory_mib)));
    return limit;
  }

  int max_moves_;
  int unit_ = 1, cap_ = 1;
  mutable Gradient scratch_;  // node_value_cores()'s look at node_value()'s solution
  std::vector<DemandClass> pending_, movers_;
  std::vector<NodeModel> nodes_;
};

// The LP's duals of the rows this relaxation prices, as multipliers (the
// LP's packing rows have no counterpart: the knapsack packs exactly).
LagrangeMultipliers from_lp_duals(const DefragBound& lp, LagrangeMultipliers m) {
  if (!lp.solved) return m;
  for (size_t i = 0; i < lp.lp.rows.size(); ++i) {
    const BoundLp::Row& row = lp.lp.rows[i];
    const double y = lp.duals[i];
    const auto cls = static_cast<size_t>(row.cls);
    if (row.family == "pending" && cls < m.pending.size()) m.pending[cls] = std::max(0.0, y);
    if (row.family == "conservation" && cls < m.movers.size()) m.movers[cls] = y;
    if (row.family == "moves") m.move = std::max(0.0, y);
    const auto node = static_cast<size_t>(row.node);
    if (row.family == "cpu" && node < m.cpu.size()) m.cpu[node] = std::max(0.0, y) * kMilliPerCore;
    if (row.family == "memory" && node < m.memory.size()) m.memory[node] = std::max(0.0, y) * kMibPerGib;
  }
  return m;
}

}  // namespace

double lagrangian_value(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                        const PodMoveInfos& infos, const LagrangeMultipliers& multipliers) {
  const LagrangianModel model(state, goal, budget, infos);
  model.check(multipliers);
  return model.value_cores(multipliers);
}

LagrangianBound lagrangian_bound(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                 const PodMoveInfos& infos, const LagrangianOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const LagrangianModel model(state, goal, budget, infos);
  LagrangianBound out;
  out.used_milli_before = static_cast<double>(state.gpu_used_milli());
  out.capacity_milli = static_cast<double>(state.gpu_capacity_milli());
  out.pending_classes = model.pending_classes();
  out.mover_classes = model.mover_classes();
  out.unit_milli = model.unit();

  LagrangeMultipliers m = model.zero();
  if (options.start) m = from_lp_duals(*options.start, m);
  Gradient g;
  out.multipliers = m;
  out.bound_milli = model.value(m, nullptr);
  out.start_milli = out.bound_milli;
  // Projected subgradient with Polyak steps; theta halves after a run of 40
  // steps without a new best. One pass per target, each from the best
  // prices so far.
  for (double fraction : options.target_fractions) {
    if (out.bound_milli <= options.known_milli + 1e-9) break;  // meets a known plan: optimal
    const double target = fraction * options.known_milli;
    m = out.multipliers;
    double theta = 1.0;
    int stale = 0;
    for (int it = 0; it < options.iterations; ++it) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > options.time_limit_s) break;
      const double v = model.value(m, &g);
      ++out.iterations;
      if (v < out.bound_milli) {
        out.bound_milli = v;
        out.multipliers = m;
        stale = 0;
      } else if (++stale >= 40) {
        theta /= 2;
        stale = 0;
        m = out.multipliers;
        if (theta < 1e-4) break;
        continue;  // the next step starts from the best prices, with their own subgradient
      }
      double norm = g.move * g.move * (model.max_moves() >= 0);
      for (double x : g.pending) norm += x * x;
      for (double x : g.movers) norm += x * x;
      for (double x : g.cpu) norm += x * x;
      for (double x : g.memory) norm += x * x;
      const double gap = v - target;
      if (norm <= 1e-12 || gap <= 1e-9) break;
      const double step = theta * gap / norm;
      auto descend = [&](std::vector<double>& x, const std::vector<double>& d, bool nonnegative) {
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] -= step * d[i];
          if (nonnegative) x[i] = std::max(0.0, x[i]);
        }
      };
      descend(m.pending, g.pending, true);
      descend(m.movers, g.movers, false);
      descend(m.cpu, g.cpu, true);
      descend(m.memory, g.memory, true);
      if (model.max_moves() >= 0) m.move = std::max(0.0, m.move - step * g.move);
    }
  }
  out.priced_milli = out.bound_milli;
  // Then each node's cores kept as a constraint, its prices polished.
  out.bound_milli = model.polish_cores(out.multipliers);
  out.move_value_milli = model.max_moves() >= 0 ? out.multipliers.move : 0;
  for (double x : out.multipliers.cpu) out.cpu_priced_nodes += x > 1e-9;
  for (double x : out.multipliers.memory) out.memory_priced_nodes += x > 1e-9;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

DefragBounds defrag_bounds(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                           const PodMoveInfos& infos, double known_milli) {
  DefragBounds out;
  out.lp = defrag_bound(state, goal, budget, infos);
  out.lp_milli =
      out.lp.solved ? std::max(out.lp.admitted_milli, out.lp.certified_milli) : std::numeric_limits<double>::infinity();
  LagrangianOptions options;
  options.known_milli = known_milli;
  options.start = &out.lp;
  out.lagrangian = lagrangian_bound(state, goal, budget, infos, options);
  out.bound_milli = std::min(out.lp_milli, out.lagrangian.bound_milli);
  return out;
}

}  // namespace gpupack
