// Experiment: after the planner, does a neighbourhood search with the exact
// ILP (defrag/ilp.h) admit more with the moves the plan leaves? Each round
// cuts a few nodes out of the state after the plan, solves the ILP on them
// (any order or order-safe), orders the moves the solution needs so that each
// fits when it runs, and appends them to the plan.
//
// Usage: defrag_lns_bench STATE.json [CAP_PCT] [ROUNDS] [NODES] [PENDING] [MOVES] [ORDER_SAFE] [SEED]
//                         [ILP_SECONDS] [PARK]
// (defaults 5% of the running pods, 200 rounds of 6 nodes, 12 pending pods,
// at most 4 moves per round, any order, seed 1, 0.5 s per ILP, no parking:
// a solution whose moves have no order where each fits is dropped; with
// PARK 1 its moved pods are all taken off first, then placed. With
// LNS_VERBOSE set in the environment, each solution is printed: every
// admission with the free GPU, CPU and memory where it lands, then each move.)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "defrag/ilp.h"
#include "defrag/methods.h"
#include "defrag/snapshot.h"
#include "policy/registry.h"
#include "sched/filter.h"
#include "sim/random.h"

namespace {

using namespace gpupack;
using Clock = std::chrono::steady_clock;

struct Cut {
  ClusterState state;
  PodMoveInfos infos;
  std::vector<PendingPod> pending;
  std::vector<PodId> to_global;  // cut pod id -> pod id in the whole state
};

Cut cut(const ClusterState& whole, const PodMoveInfos& infos, const std::vector<int>& nodes,
        const std::vector<PendingPod>& pending, int max_pending, Rng& rng) {
  std::vector<NodeSpec> specs;
  std::vector<int> new_id(static_cast<size_t>(whole.node_count()), -1);
  for (int n : nodes) {
    new_id[static_cast<size_t>(n)] = static_cast<int>(specs.size());
    specs.push_back(whole.spec(NodeId{n}));
  }
  Cut c{ClusterState(specs), {}, {}, {}};
  for (PodId p : whole.bound_pods()) {
    Assignment a = whole.assignment(p);
    const int n = new_id[index(a.node)];
    if (n < 0) continue;
    a.node = NodeId{n};
    const PodId local{static_cast<int32_t>(c.to_global.size())};
    if (!c.state.bind(local, whole.request(p), a).is_ok()) throw std::runtime_error("cut: bind failed");
    c.infos.push_back(move_info(infos, p));
    c.to_global.push_back(p);
  }
  c.state.commit();
  std::vector<size_t> order(pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(std::span<size_t>(order));
  std::map<std::string, int> per_shape;
  for (size_t i : order) {
    if (static_cast<int>(c.pending.size()) >= max_pending) break;
    const Request& r = pending[i].request;
    bool fits = false;
    for (int n = 0; n < c.state.node_count() && !fits; ++n) fits = fits_empty_plain(c.state, NodeId{n}, r);
    if (!fits) continue;
    const std::string shape = fmt::format("{}/{}/{}/{}/{}", r.gpu_count, r.gpu_milli, r.cpu_milli, r.memory_mib,
                                          static_cast<uint64_t>(r.allowed_models));
    if (per_shape[shape]++ >= 2) continue;
    const PodId local{static_cast<int32_t>(c.to_global.size())};
    c.pending.push_back({local, r});
    c.to_global.push_back(pending[i].id);
  }
  c.infos.resize(c.to_global.size());
  return c;
}

// Applies `moves` to `state` in an order where each fits when it runs
// (depth-first over orders, failed sets remembered); true and applied when
// one exists, false and `state` unchanged otherwise.
bool apply_in_some_order(ClusterState& state, const std::vector<PlanStep>& moves, std::vector<PlanStep>& out) {
  const size_t n = moves.size();
  if (n > 20) return false;
  std::unordered_set<uint32_t> dead;
  std::vector<size_t> order;
  std::function<bool(uint32_t)> go = [&](uint32_t done) -> bool {
    if (done == (1u << n) - 1) return true;
    if (dead.count(done)) return false;
    for (size_t i = 0; i < n; ++i) {
      if (done >> i & 1u) continue;
      const auto mark = state.checkpoint();
      if (apply_step(state, moves[i]).empty()) {
        order.push_back(i);
        if (go(done | 1u << i)) return true;
        order.pop_back();
      }
      state.rollback(mark);
    }
    dead.insert(done);
    return false;
  };
  const auto entry = state.checkpoint();
  if (!go(0)) {
    state.rollback(entry);
    return false;
  }
  for (size_t i : order) out.push_back(moves[i]);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s STATE.json [CAP_PCT] [ROUNDS] [NODES] [PENDING] [MOVES] [ORDER_SAFE] [SEED]\n",
                 argv[0]);
    return 2;
  }
  try {
    Snapshot snap = read_snapshot(argv[1]);
    const double cap_pct = argc > 2 ? std::stod(argv[2]) : 5;
    const int rounds = argc > 3 ? std::stoi(argv[3]) : 200;
    const int per_cut = argc > 4 ? std::stoi(argv[4]) : 6;
    const int max_pending = argc > 5 ? std::stoi(argv[5]) : 12;
    const int max_moves = argc > 6 ? std::stoi(argv[6]) : 4;
    const bool order_safe = argc > 7 && std::stoi(argv[7]) != 0;
    Rng rng(argc > 8 ? std::stoull(argv[8]) : 1);
    const double ilp_limit_s = argc > 9 ? std::stod(argv[9]) : 0.5;
    const bool park = argc > 10 && std::stoi(argv[10]) != 0;
    const bool verbose = std::getenv("LNS_VERBOSE") != nullptr;  // print each solution's structure
    int parked = 0;

    DefragGoal goal;
    goal.pending = snap.pending;
    goal.target = snapshot_target(snap);
    DefragBudget budget;
    budget.max_moves = static_cast<int>(cap_pct / 100.0 * snap.state.bound_pod_count() + 1e-9);
    auto policy = make_policy("fgd", {42, goal.target});
    const auto t0 = Clock::now();
    const DefragPlan plan = plan_by_method("planner", snap.state, goal, budget, snap.infos, *policy, {});
    const double plan_s = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("planner: {} milli admitted, {} moves of {}, {:.2f} s\n", plan.after.admitted_gpu_milli, plan.moves(),
               budget.max_moves, plan_s);

    ClusterState state = snap.state;
    apply_plan(state, plan);
    state.commit();
    PodMoveInfos infos = snap.infos;
    auto hold = [&](PodId p) {
      if (index(p) >= infos.size()) infos.resize(index(p) + 1);
      infos[index(p)].immovable = true;
    };
    for (const PlanStep& s : plan.steps) hold(s.pod);
    std::unordered_set<int32_t> waiting;
    for (PodId p : plan.not_admitted) waiting.insert(static_cast<int32_t>(p));
    std::vector<PendingPod> pending;
    for (const PendingPod& p : snap.pending)
      if (waiting.count(static_cast<int32_t>(p.id))) pending.push_back(p);
    int moves_left = budget.max_moves - plan.moves();

    int64_t gained = 0;
    int used = 0, tries = 0, solved_any = 0, unordered = 0;
    double ilp_s = 0;
    const auto t1 = Clock::now();
    for (int round = 0; round < rounds && moves_left > 0 && !pending.empty(); ++round) {
      int32_t smallest = kGpuMilliPerGpu;
      for (const PendingPod& p : pending)
        if (p.request.is_gpu()) smallest = std::min(smallest, p.request.gpu_milli);
      std::vector<int> gpu_room, cpu_room;
      for (int n = 0; n < state.node_count(); ++n) {
        const NodeId node{n};
        if (state.gpu_count(node) == 0) continue;
        const auto free = state.gpu_free_milli(node);
        if (std::any_of(free.begin(), free.end(), [&](int32_t f) { return f >= smallest; }))
          gpu_room.push_back(n);
        else if (state.cpu_free_milli(node) >= 4000)
          cpu_room.push_back(n);
      }
      rng.shuffle(std::span<int>(gpu_room));
      rng.shuffle(std::span<int>(cpu_room));
      std::vector<int> nodes;
      for (size_t k = 0; static_cast<int>(nodes.size()) < per_cut && k < 2 * (gpu_room.size() + cpu_room.size()); ++k) {
        const std::vector<int>& from = k % 2 == 0 ? gpu_room : cpu_room;
        if (k / 2 < from.size()) nodes.push_back(from[k / 2]);
      }
      std::sort(nodes.begin(), nodes.end());
      Cut c = cut(state, infos, nodes, pending, max_pending, rng);
      if (c.pending.empty()) continue;
      DefragGoal g;
      g.pending = c.pending;
      DefragBudget b;
      b.max_moves = std::min(max_moves, moves_left);
      ++tries;
      const IlpResult r = solve_defrag_ilp(c.state, g, b, c.infos, ilp_limit_s, order_safe);
      ilp_s += r.seconds;
      if (!r.solved || r.admitted.empty()) continue;
      ++solved_any;
      std::vector<PlanStep> moves, admits, out;
      for (const auto& [local, at] : r.placed) {
        const PodId p = c.to_global[index(local)];
        Assignment to = at;
        to.node = NodeId{nodes[index(at.node)]};
        if (state.is_bound(p)) {
          const Assignment from = state.assignment(p);
          const PodMoveInfo& info = move_info(infos, p);
          const MoveKind kind = classify_move(info, from.node, to.node);
          moves.push_back(PlanStep{kind, p, state.request(p), from, to, move_cost(info, kind), {}});
        } else {
          const Request& req = c.pending[index(local) - (c.to_global.size() - c.pending.size())].request;
          admits.push_back(PlanStep{MoveKind::kAdmit, p, req, Assignment{}, to, 0, {}});
        }
      }
      if (verbose) {
        // What the solution does, before it is applied: each admission's
        // shortage where it lands, then each move.
        for (const PlanStep& a : admits) {
          const NodeId n = a.to.node;
          const auto free = state.gpu_free_milli(n);
          int32_t best = 0;
          for (int32_t f : free) best = std::max(best, f);
          fmt::print("  admit {}x{} cpu {} mem {} on node {}: best GPU hole {}, cpu free {}, mem free {}\n",
                     a.request.gpu_count, a.request.gpu_milli, a.request.cpu_milli, a.request.memory_mib, index(n),
                     best, state.cpu_free_milli(n), state.memory_free_mib(n));
        }
        for (const PlanStep& m : moves)
          fmt::print("  move {}x{} cpu {} mem {}: node {} gpu {:x} -> node {} gpu {:x}\n", m.request.gpu_count,
                     m.request.gpu_milli, m.request.cpu_milli, m.request.memory_mib, index(m.from.node),
                     m.from.gpu_mask, index(m.to.node), m.to.gpu_mask);
      }
      const auto mark = state.checkpoint();
      bool ok = apply_in_some_order(state, moves, out);
      if (verbose) fmt::print("  -> {}\n", ok ? "ordered" : park ? "parked" : "no order");
      if (!ok && park) {
        ok = true;
        for (const PlanStep& m : moves) ok = ok && state.unbind(m.pod).is_ok();
        for (const PlanStep& m : moves) ok = ok && state.bind(m.pod, m.request, m.to).is_ok();
        if (ok) out = moves, ++parked;
      }
      for (const PlanStep& a : admits) ok = ok && apply_step(state, a).empty();
      if (!ok) {
        state.rollback(mark);
        ++unordered;
        continue;
      }
      state.commit();
      for (const PlanStep& s : out) hold(s.pod);
      moves_left -= static_cast<int>(out.size());
      used += static_cast<int>(out.size());
      std::unordered_set<int32_t> in;
      for (const PlanStep& a : admits) {
        gained += a.request.total_gpu_milli();
        in.insert(static_cast<int32_t>(a.pod));
      }
      std::erase_if(pending, [&](const PendingPod& p) { return in.count(static_cast<int32_t>(p.id)) > 0; });
    }
    const double lns_s = std::chrono::duration<double>(Clock::now() - t1).count();
    fmt::print(
        "search ({}): +{} milli with {} more moves; {} cuts tried, {} admitted something, {} had no safe order, {} "
        "parked; "
        "{:.2f} s ({:.2f} s in the ILP)\n",
        order_safe ? "order-safe" : "any order", gained, used, tries, solved_any, unordered, parked, lns_s, ilp_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "defrag_lns_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
