#include "defrag/bound_lagrangian.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "defrag/bound.h"
#include "defrag/ilp.h"
#include "defrag/random_cluster.h"
#include "sim/random.h"

namespace gpupack {
namespace {

using testing::make_random_cluster;
using testing::nodes;
using testing::shared;

// Largest values of random prices: pending, movers (drawn around 0), CPU,
// memory, move.
struct PriceScales {
  double pending, movers, cpu, memory, move;
};

void randomize(LagrangeMultipliers& m, Rng& rng, const PriceScales& scale) {
  auto draw = [&](double top) { return top * static_cast<double>(rng.below(1001)) / 1000.0; };
  for (double& x : m.pending) x = draw(scale.pending);
  for (double& x : m.movers) x = draw(scale.movers) - scale.movers / 2;
  for (double& x : m.cpu) x = draw(scale.cpu);
  for (double& x : m.memory) x = draw(scale.memory);
  m.move = draw(scale.move);
}

// Weak duality: the value at any multipliers bounds the exact optimum (the
// ILP over GPUs, order of moves ignored), checked at the searched
// multipliers and at random ones.
TEST(DefragLagrangianBound, AnyMultipliersBoundTheExactOptimum) {
  int compared = 0, below_lp = 0, unlimited = 0;
  Rng rng(7);
  for (uint64_t seed = 400; seed < 440; ++seed) {
    // Every third cluster with few cores per node, where CPU binds.
    auto c = make_random_cluster(seed, 3, 4, 40, 3, seed % 2 == 0, seed % 3 == 0 ? 9000 : 24000);
    if (c.pending.empty()) continue;
    DefragGoal goal;
    goal.pending = c.pending;
    DefragBudget budget;
    budget.max_moves = seed % 5 == 4 ? -1 : static_cast<int>(seed % 4);  // -1: no limit
    const IlpResult exact = solve_defrag_ilp(c.state, goal, budget, c.infos, 20, false);
    if (!exact.optimal) continue;
    const DefragBound lp = defrag_bound(c.state, goal, budget, c.infos);
    ASSERT_TRUE(lp.solved);
    LagrangianOptions options;
    options.start = &lp;
    options.iterations = 300;
    const LagrangianBound b = lagrangian_bound(c.state, goal, budget, c.infos, options);
    EXPECT_GE(b.bound_milli + 1e-6, exact.objective) << "seed " << seed;
    EXPECT_NEAR(lagrangian_value(c.state, goal, budget, c.infos, b.multipliers), b.bound_milli, 1e-6);
    below_lp += b.bound_milli < lp.admitted_milli - 1;
    unlimited += budget.max_moves < 0;
    for (int trial = 0; trial < 20; ++trial) {
      LagrangeMultipliers m = b.multipliers;
      randomize(m, rng, {1200, 2000, 300, 100, 1500});
      EXPECT_GE(lagrangian_value(c.state, goal, budget, c.infos, m) + 1e-6, exact.objective)
          << "seed " << seed << " trial " << trial;
    }
    ++compared;
  }
  ASSERT_GE(compared, 20);
  EXPECT_GE(below_lp, 1);  // not vacuous: whole pods per GPU cut below the LP somewhere
  EXPECT_GE(unlimited, 3);
}

// The Lagrangian by brute force, as the header defines it, for GPU pods
// only: per GPU every subset of movable pods leaving and every multiset of
// pending or arriving shares in the room left; with `cores`, each node's
// GPUs together within its free cores. Classes in request order.
double brute_force_value(const ClusterState& s, const DefragGoal& goal, const DefragBudget& budget,
                         const PodMoveInfos& infos, const LagrangeMultipliers& m, bool cores) {
  auto key = [](const Request& r) { return request_class(r); };
  std::map<RequestClass, std::pair<Request, int>> pending, movers;
  for (const PendingPod& p : goal.pending) ++pending.try_emplace(key(p.request), p.request, 0).first->second.second;
  for (PodId p : s.bound_pods())
    if (!move_info(infos, p).immovable) ++movers.try_emplace(key(s.request(p)), s.request(p), 0).first->second.second;
  auto position = [](const auto& map, const Request& r, auto k) {
    return static_cast<size_t>(std::distance(map.begin(), map.find(k(r))));
  };
  double total = m.move * std::max(budget.max_moves, 0);
  size_t k = 0;
  for (const auto& [kk, c] : pending) total += m.pending[k++] * c.second;
  for (int n = 0; n < s.node_count(); ++n) {
    const NodeId node{n};
    const double rho = m.cpu[static_cast<size_t>(n)] / 1000, sigma = m.memory[static_cast<size_t>(n)] / 1024;
    total += rho * static_cast<double>(s.cpu_free_milli(node)) + sigma * static_cast<double>(s.memory_free_mib(node));
    auto use = [&](const Request& r) {
      return rho * static_cast<double>(r.cpu_milli) + sigma * static_cast<double>(r.memory_mib);
    };
    // (size, per-GPU value) of what may come in.
    std::vector<std::pair<int, double>> items;
    for (const auto& [kk, c] : pending)
      items.push_back({c.first.gpu_milli, (static_cast<double>(c.first.total_gpu_milli()) -
                                           m.pending[position(pending, c.first, key)] - use(c.first)) /
                                              c.first.gpu_count});
    for (const auto& [kk, c] : movers)
      items.push_back(
          {c.first.gpu_milli, (-m.movers[position(movers, c.first, key)] - use(c.first)) / c.first.gpu_count});
    std::vector<int> item_cores;
    for (const auto& [kk, c] : pending)
      item_cores.push_back(
          static_cast<int>(std::floor(static_cast<double>(c.first.cpu_milli) / c.first.gpu_count / 1000 + 1e-9)));
    for (const auto& [kk, c] : movers)
      item_cores.push_back(
          static_cast<int>(std::floor(static_cast<double>(c.first.cpu_milli) / c.first.gpu_count / 1000 + 1e-9)));
    std::function<double(size_t, int)> fill = [&](size_t i, int room) {
      if (i == items.size()) return 0.0;
      double best = fill(i + 1, room);
      for (int taken = 1; taken * items[i].first <= room; ++taken)
        best = std::max(best, taken * items[i].second + fill(i + 1, room - taken * items[i].first));
      return best;
    };
    // Per GPU, every (value, cores arriving, cores leaving) it can take;
    // then the node's best with arrivals - departures within its free
    // cores (arrivals rounded down per GPU share, departures up), when
    // `cores`, else the best per GPU.
    auto down = [](double milli) { return static_cast<int>(std::floor(milli / 1000 + 1e-9)); };
    auto up = [](double milli) { return static_cast<int>(std::ceil(milli / 1000 - 1e-9)); };
    struct Option {
      double value;
      int net_cores;
    };
    std::vector<std::vector<Option>> per_gpu;
    std::function<void(size_t, int, double, int, std::vector<Option>&)> fills = [&](size_t i, int room, double v,
                                                                                    int cores,
                                                                                    std::vector<Option>& out) {
      if (i == items.size()) {
        out.push_back({v, cores});
        return;
      }
      for (int taken = 0; taken * items[i].first <= room; ++taken)
        fills(i + 1, room - taken * items[i].first, v + taken * items[i].second, cores + taken * item_cores[i], out);
    };
    for (int g = 0; g < s.gpu_count(node); ++g) {
      std::vector<PodId> here;
      for (PodId p : s.bound_pods())
        if (s.assignment(p).node == node && (s.assignment(p).gpu_mask >> g) & 1u && !move_info(infos, p).immovable)
          here.push_back(p);
      double best = -1e18;
      std::vector<Option> options;
      for (uint32_t subset = 0; subset < (1u << here.size()); ++subset) {
        int room = s.gpu_free_milli(node)[g];
        double v = 0;
        int leaving = 0;
        for (size_t i = 0; i < here.size(); ++i) {
          if (!((subset >> i) & 1u)) continue;
          const Request& r = s.request(here[i]);
          room += s.assignment(here[i]).gpu_milli;
          v += (m.movers[position(movers, r, key)] - m.move + use(r)) / r.gpu_count;
          leaving += up(static_cast<double>(r.cpu_milli) / r.gpu_count);
        }
        best = std::max(best, v + fill(0, room));
        if (cores) fills(0, room, v, -leaving, options);
      }
      if (!cores) total += best;
      per_gpu.push_back(std::move(options));
    }
    if (!cores) continue;
    const int free_cores = down(static_cast<double>(s.cpu_free_milli(node)));
    std::function<double(size_t, int)> node_best = [&](size_t g, int net) {
      if (g == per_gpu.size()) return net <= free_cores ? 0.0 : -1e18;
      double best = -1e18;
      for (const Option& o : per_gpu[g]) best = std::max(best, o.value + node_best(g + 1, net + o.net_cores));
      return best;
    };
    total += node_best(0, 0);
  }
  return total;
}

TEST(DefragLagrangianBound, EachSubproblemIsSolvedExactly) {
  Rng rng(11);
  const int32_t shares[] = {300, 400, 500, 700, 1000};
  int cut = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    // Every other cluster with 4 to 7 cores per node, where cores bind.
    ClusterState s(nodes(2, 2, seed % 2 == 0 ? 16000 : 4000 + 1000 * static_cast<int64_t>(rng.below(4))));
    PodMoveInfos infos;
    int id = 0;
    for (int n = 0; n < 2; ++n)
      for (int g = 0; g < 2; ++g)
        for (int32_t used = 0;;) {
          const int32_t m = shares[rng.below(5)];
          if (used + m > 1000 || rng.below(4) == 0) break;
          const Request r = rng.below(5) == 0 && used == 0 && g == 0 ? Request{2000, 2048, 2, 1000, 0}
                                                                     : shared(m, 1000 * (1 + rng.below(3)));
          const uint32_t mask = r.gpu_count == 2 ? 0b11u : 1u << g;
          if (!s.bind(PodId{id}, r, {NodeId{n}, mask, r.gpu_milli}).is_ok()) break;
          infos.resize(static_cast<size_t>(id) + 1);
          infos.back().immovable = rng.below(4) == 0;
          ++id;
          used += r.gpu_milli;
          if (r.gpu_count == 2) break;
        }
    DefragGoal goal;
    goal.pending = {{PodId{id}, shared(shares[rng.below(4)], 2000)}, {PodId{id + 1}, Request{1000, 1024, 2, 1000, 0}}};
    DefragBudget budget;
    budget.max_moves = static_cast<int>(rng.below(3));
    LagrangianOptions options;
    options.iterations = 1;
    LagrangeMultipliers m = lagrangian_bound(s, goal, budget, infos, options).multipliers;
    randomize(m, rng, {1200, 1200, 200, 100, 400});
    const double with_cores = brute_force_value(s, goal, budget, infos, m, true);
    EXPECT_NEAR(lagrangian_value(s, goal, budget, infos, m), with_cores, 1e-6) << "seed " << seed;
    const double priced = brute_force_value(s, goal, budget, infos, m, false);
    EXPECT_LE(with_cores, priced + 1e-6) << "seed " << seed;
    cut += with_cores < priced - 1e-6;
  }
  EXPECT_GE(cut, 3);  // not vacuous: the cores bind somewhere
}

// A node with one core free and a 500 milli hole; the pending pod asks 500
// milli and 4 cores; nothing may move. Priced only, the bound counts a
// quarter of the pod (125 milli); with the node's cores kept whole, none.
TEST(DefragLagrangianBound, KeepsANodesCoresWhole) {
  ClusterState s(nodes(1, 1, 4000));
  PodMoveInfos infos(2);
  ASSERT_TRUE(s.bind(PodId{0}, shared(500, 3000), {NodeId{0}, 1u, 500}).is_ok());
  infos[0].immovable = true;
  DefragGoal goal;
  goal.pending = {{PodId{1}, shared(500, 4000)}};
  DefragBudget budget;
  budget.max_moves = 5;
  const DefragBound lp = defrag_bound(s, goal, budget, infos);
  ASSERT_TRUE(lp.solved);
  LagrangianOptions options;
  options.start = &lp;
  const LagrangianBound b = lagrangian_bound(s, goal, budget, infos, options);
  EXPECT_NEAR(b.priced_milli, 125, 1);
  EXPECT_NEAR(b.bound_milli, 0, 1e-6);
  EXPECT_NEAR(lagrangian_value(s, goal, budget, infos, b.multipliers), b.bound_milli, 1e-6);
}

TEST(DefragLagrangianBound, SeesThatSliversHoldNoWholePod) {
  // Two GPUs, each 470 + 470 of pods that may not move: 60 milli free on
  // each. The LP admits 120 milli of a 220 pod fractionally; no GPU can
  // take one whole.
  ClusterState s(nodes(1, 2));
  PodMoveInfos infos(5);
  for (int g = 0; g < 2; ++g)
    for (int k = 0; k < 2; ++k) {
      const PodId p{2 * g + k};
      ASSERT_TRUE(s.bind(p, shared(470), {NodeId{0}, 1u << g, 470}).is_ok());
      infos[index(p)].immovable = true;
    }
  DefragGoal goal;
  goal.pending = {{PodId{4}, shared(220)}};
  const DefragBound lp = defrag_bound(s, goal, {}, infos);
  ASSERT_TRUE(lp.solved);
  EXPECT_NEAR(lp.admitted_milli, 120, 1e-6);
  LagrangianOptions options;
  options.start = &lp;
  EXPECT_NEAR(lagrangian_bound(s, goal, {}, infos, options).bound_milli, 0, 1e-6);
}

TEST(DefragLagrangianBound, RefusesInputItDoesNotModel) {
  ClusterState s(nodes(1, 1));
  DefragGoal goal;
  goal.pending = {{PodId{0}, shared(1500)}};
  EXPECT_THROW(lagrangian_bound(s, goal, {}, {}), std::invalid_argument);
  EXPECT_THROW(defrag_bound(s, goal, {}, {}), std::invalid_argument);
  goal.pending = {{PodId{0}, Request{1000, 1024, 1, 0, 0}}};
  EXPECT_THROW(lagrangian_bound(s, goal, {}, {}), std::invalid_argument);
  goal.pending = {{PodId{0}, shared(500)}};
  BoundOptions negative_time;
  negative_time.time_limit_s = -5;                                // GLPK would abort on a negative limit
  EXPECT_NO_THROW(defrag_bound(s, goal, {}, {}, negative_time));  // and the process is still here
}

TEST(DefragLagrangianBound, RefusesMultipliersOfAnotherProblem) {
  ClusterState s(nodes(2, 1));
  DefragGoal goal;
  goal.pending = {{PodId{0}, shared(500)}};
  LagrangeMultipliers m;  // empty: sized for no nodes and no classes
  EXPECT_THROW(lagrangian_value(s, goal, {}, {}, m), std::invalid_argument);
  goal.kind = GoalKind::kFreeGpus;
  EXPECT_THROW(lagrangian_bound(s, goal, {}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace gpupack
