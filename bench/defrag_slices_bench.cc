// Where the gap between the defrag planner and the bounds lies: on small
// slices of a saved cluster state, the planner, the exact optimum (the ILP
// of defrag/ilp.h, order of moves ignored and order-safe) and both bounds
// (defrag/bound.h, defrag/bound_lagrangian.h) side by side.
//
// Usage: defrag_slices_bench STATE.json [SLICES] [NODES] [PENDING] [SEED]
//   (defaults 20 slices of 6 GPU nodes, half with GPU room and half with
//   spare CPU, drawn at random, with 12 pending pods drawn from the state's;
//   the move budget is 5% of the slice's pods, at least 4).
// Prints one row per slice and the totals.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "defrag/bound_lagrangian.h"
#include "defrag/ilp.h"
#include "defrag/methods.h"
#include "defrag/snapshot.h"
#include "policy/registry.h"
#include "sim/random.h"

namespace {

using namespace gpupack;

struct Slice {
  ClusterState state;
  PodMoveInfos infos;
  std::vector<PendingPod> pending;
};

Slice make_slice(const Snapshot& snap, const std::vector<int>& nodes, int pending, Rng& rng) {
  std::vector<NodeSpec> specs;
  std::vector<int> new_id(static_cast<size_t>(snap.state.node_count()), -1);
  for (int n : nodes) {
    new_id[static_cast<size_t>(n)] = static_cast<int>(specs.size());
    specs.push_back(snap.state.spec(NodeId{n}));
  }
  Slice s{ClusterState(specs), {}, {}};
  int next = 0;
  for (PodId p : snap.state.bound_pods()) {
    Assignment a = snap.state.assignment(p);
    const int n = new_id[index(a.node)];
    if (n < 0) continue;
    a.node = NodeId{n};
    if (!s.state.bind(PodId{next}, snap.state.request(p), a).is_ok()) throw std::runtime_error("slice: bind failed");
    s.infos.push_back(move_info(snap.infos, p));
    ++next;
  }
  s.state.commit();
  std::vector<size_t> order(snap.pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(std::span<size_t>(order));
  for (size_t i = 0; i < order.size() && static_cast<int>(s.pending.size()) < pending; ++i)
    s.pending.push_back({PodId{next++}, snap.pending[order[i]].request});
  s.infos.resize(static_cast<size_t>(next));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s STATE.json [SLICES] [NODES] [PENDING] [SEED]\n", argv[0]);
    return 2;
  }
  try {
    const Snapshot snap = read_snapshot(argv[1]);
    const int slices = argc > 2 ? std::stoi(argv[2]) : 20;
    const int per_slice = argc > 3 ? std::stoi(argv[3]) : 6;
    const int pending = argc > 4 ? std::stoi(argv[4]) : 12;
    Rng rng(argc > 5 ? std::stoull(argv[5]) : 1);
    // Half of each slice from nodes with GPU room (a GPU with at least the
    // smallest pending share free), half from nodes with spare CPU (4 cores):
    // on openb the one lacks CPU and the other GPU room, which moves trade.
    int32_t smallest = kGpuMilliPerGpu;
    for (const PendingPod& p : snap.pending)
      if (p.request.is_gpu()) smallest = std::min(smallest, p.request.gpu_milli);
    std::vector<int> gpu_room, cpu_room;
    for (int n = 0; n < snap.state.node_count(); ++n) {
      const NodeId node{n};
      if (snap.state.gpu_count(node) == 0) continue;
      const auto free = snap.state.gpu_free_milli(node);
      if (std::any_of(free.begin(), free.end(), [&](int32_t f) { return f >= smallest; }))
        gpu_room.push_back(n);
      else if (snap.state.cpu_free_milli(node) >= 4000)
        cpu_room.push_back(n);
    }
    fmt::print("| slice | pods | moves | planner | exact, order-safe | exact, any order | Lagrangian | LP |\n");
    fmt::print("|---|---|---|---|---|---|---|---|\n");
    double sum[6] = {};
    int proven = 0;
    for (int i = 0; i < slices; ++i) {
      rng.shuffle(std::span<int>(gpu_room));
      rng.shuffle(std::span<int>(cpu_room));
      std::vector<int> nodes;
      for (size_t k = 0; static_cast<int>(nodes.size()) < per_slice && k < gpu_room.size() + cpu_room.size(); ++k) {
        const std::vector<int>& from = k % 2 == 0 ? gpu_room : cpu_room;
        if (k / 2 < from.size()) nodes.push_back(from[k / 2]);
      }
      std::sort(nodes.begin(), nodes.end());
      const Slice s = make_slice(snap, nodes, pending, rng);
      DefragGoal goal;
      goal.pending = s.pending;
      DefragBudget budget;
      budget.max_moves = std::max(4, s.state.bound_pod_count() * 5 / 100);
      auto policy = make_policy("bestfit", {});
      const DefragPlan plan = plan_by_method("planner", s.state, goal, budget, s.infos, *policy, {});
      const IlpResult safe = solve_defrag_ilp(s.state, goal, budget, s.infos, 60, true);
      const IlpResult any = solve_defrag_ilp(s.state, goal, budget, s.infos, 60, false);
      const DefragBounds bounds =
          defrag_bounds(s.state, goal, budget, s.infos, static_cast<double>(plan.after.admitted_gpu_milli));
      const double lp_bound = bounds.lp_milli;
      const LagrangianBound& lb = bounds.lagrangian;
      auto exact = [](const IlpResult& r) {
        return r.optimal ? fmt::format("{:.0f}", r.objective) : fmt::format("{:.0f}?", r.objective);
      };
      fmt::print("| {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} |\n", i + 1, s.state.bound_pod_count(),
                 budget.max_moves, plan.after.admitted_gpu_milli, exact(safe), exact(any), lb.bound_milli, lp_bound);
      if (!safe.optimal || !any.optimal) continue;
      ++proven;
      const double row[6] = {static_cast<double>(plan.after.admitted_gpu_milli),
                             safe.objective,
                             any.objective,
                             lb.bound_milli,
                             lp_bound,
                             0};
      for (int k = 0; k < 5; ++k) sum[k] += row[k];
    }
    fmt::print(
        "\nslices with both optima proven: {} of {}; totals over them: planner {:.0f}, exact order-safe {:.0f}, "
        "exact any order {:.0f}, Lagrangian {:.0f}, LP {:.0f}\n",
        proven, slices, sum[0], sum[1], sum[2], sum[3], sum[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "defrag_slices_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
