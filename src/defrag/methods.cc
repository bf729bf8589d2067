#include "defrag/methods.h"

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <stdexcept>

#include "defrag/chains.h"
#include "defrag/refine.h"
#include "defrag/swaps.h"

namespace gpupack {
namespace {

DefragMethodFn descheduler(DeschedulerStrategy strategy) {
  return
      [strategy](const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                 const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank, const PlannerOptions&) {
        DeschedulerOptions opt;
        opt.strategy = strategy;
        return plan_descheduler(state, goal, budget, infos, policy, node_rank, opt);
      };
}

DefragMethodFn frag_descheduler(FragDeschedulerRule rule) {
  return [rule](const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank, const PlannerOptions&) {
    return plan_frag_descheduler(state, goal, budget, infos, policy, node_rank, rule);
  };
}

// The greedy, and under a move cap for goal admit the consolidation-first
// plan too, keeping the one that admits more.
DefragPlan plan_once(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                     const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                     const PlannerOptions& planner) {
  DefragPlan plan = plan_defrag(state, goal, budget, infos, planner);
  // Consolidation spends the moves it is given: only under a move cap
  // (without one the greedy's fewest moves stand).
  if (!planner.consolidate || budget.max_moves < 0 || goal.kind != GoalKind::kAdmitPending || goal.gang ||
      plan.not_admitted.empty())
    return plan;
  DefragPlan other = plan_consolidate_first(state, goal, budget, infos, policy, node_rank, planner);
  const double seconds = plan.plan_seconds + other.plan_seconds;
  DefragPlan& best = other.after.admitted_gpu_milli > plan.after.admitted_gpu_milli ? other : plan;
  best.plan_seconds = seconds;
  return std::move(best);
}

}  // namespace

// The one list of defragmentation methods.
const std::vector<DefragMethodInfo>& defrag_method_table() {
  static const std::vector<DefragMethodInfo> t = {
      {"planner",
       "gpupack's move planner: fewest moves that reach the goal (greedy + chains), or consolidation rounds first "
       "when they admit more; under a move cap, moves the admissions do not need are dropped and re-spent, then "
       "pods trade GPUs (swaps) and leave along chains of moves with the moves left",
       [](const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget, const PodMoveInfos& infos,
          Policy& policy, std::span<const int64_t> node_rank, const PlannerOptions& planner) {
         const ReplanFn once = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b,
                                   const PodMoveInfos& i) { return plan_once(s, g, b, i, policy, node_rank, planner); };
         // The greedy alone, without consolidation rounds (no policy).
         const ReplanFn greedy = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b,
                                     const PodMoveInfos& i) { return plan_defrag(s, g, b, i, planner); };
         const ReplanFn swaps = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b,
                                    const PodMoveInfos& i) { return plan_swaps(s, g, b, i, planner.time_limit_s); };
         const ReplanFn chains = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b,
                                     const PodMoveInfos& i) {
           return plan_chains(s, g, b, i, 4, planner.time_limit_s);
         };
         const ReplanFn long_chains = [&](const ClusterState& s, const DefragGoal& g, const DefragBudget& b,
                                          const PodMoveInfos& i) {
           return plan_chains(s, g, b, i, 6, planner.time_limit_s, 5);
         };
         const bool swapping = planner.swaps && planner.refine && budget.max_moves >= 0 &&
                               goal.kind == GoalKind::kAdmitPending && !goal.gang;
         // The whole pipeline for one move cap.
         const auto full = [&](const DefragBudget& cap) {
           if (!swapping) {
             DefragPlan plan = once(state, goal, cap, infos);
             // Under a move cap, moves the admissions do not need are worth spending again.
             if (planner.refine && cap.max_moves >= 0)
               plan = refine_plan(state, std::move(plan), goal, cap, infos, once);
             return plan;
           }
           // The greedy's plan pruned, swaps with the moves left; and a plan of
           // swaps first (2 moves per admission, the cheapest admissions on
           // openb), the greedy with the moves left, swaps again. The one that
           // admits more is kept: never less than the greedy's plan. After the
           // swaps the greedy re-plans without consolidation rounds: on openb
           // (seeds 42-51 at 1, 2 and 5% of pods moved) they changed none of
           // the thirty plans and took 40-65% of that pipeline's time. The two
           // pipelines share only const inputs, and the second uses no policy:
           // with threads > 1 they run side by side (plan_by_method() times
           // the whole method).
           const auto greedy_first = [&] {
             return refine_plan(state, once(state, goal, cap, infos), goal, cap, infos, swaps, 8, " + swaps");
           };
           const auto swaps_first = [&] {
             DefragPlan first = plan_swaps(state, goal, cap, infos, planner.time_limit_s);
             first = refine_plan(state, std::move(first), goal, cap, infos, greedy, 8, " + greedy");
             return refine_plan(state, std::move(first), goal, cap, infos, swaps, 8, " + swaps");
           };
           DefragPlan after, first;
           if (planner.threads > 1) {
             auto pending = std::async(std::launch::async, swaps_first);
             after = greedy_first();
             first = pending.get();
           } else {
             after = greedy_first();
             first = swaps_first();
           }
           DefragPlan& best = first.after.admitted_gpu_milli > after.after.admitted_gpu_milli ? first : after;
           if (!planner.chains) return std::move(best);
           // Then chains and cycles of up to 4 moves with the moves left
           // (holes under the smallest pending share merged three at a time),
           // then of 5 and 6 moves for what those left.
           DefragPlan chained = refine_plan(state, std::move(best), goal, cap, infos, chains, 8, " + chains");
           return refine_plan(state, std::move(chained), goal, cap, infos, long_chains, 8, " + long chains");
         };
         DefragPlan plan = full(budget);
         // Under a value rule, the greedy's plan (fewest moves per admission,
         // without consolidation) may keep more once both are trimmed.
         if (planner.max_moves_per_gpu < 0 || !planner.consolidate || budget.max_moves < 0 ||
             goal.kind != GoalKind::kAdmitPending || goal.gang)
           return plan;
         const double limit = planner.max_moves_per_gpu;
         // A smaller cap too: the moves the rule allows for what the plan admits.
         const int64_t allowed =
             static_cast<int64_t>(limit * static_cast<double>(plan.after.admitted_gpu_milli) / kGpuMilliPerGpu);
         const int moves_before = plan.use.moves;
         std::vector<DefragPlan> tries;
         tries.push_back(trim_to_value(state, std::move(plan), goal, infos, limit));
         tries.push_back(trim_to_value(state, plan_defrag(state, goal, budget, infos, planner), goal, infos, limit));
         if (allowed > 0 && allowed < moves_before && allowed < budget.max_moves) {
           DefragBudget smaller = budget;
           smaller.max_moves = static_cast<int>(allowed);
           tries.push_back(trim_to_value(state, full(smaller), goal, infos, limit));
         }
         size_t best = 0;
         for (size_t i = 0; i < tries.size(); ++i) {
           const int64_t a = tries[i].after.admitted_gpu_milli, b = tries[best].after.admitted_gpu_milli;
           if (a > b || (a == b && tries[i].use.moves < tries[best].use.moves)) best = i;
         }
         return std::move(tries[best]);
       }},
      {"high-node-utilization", "descheduler HighNodeUtilization: empty the least used nodes",
       descheduler(DeschedulerStrategy::kHighNodeUtilization)},
      {"low-node-utilization", "descheduler LowNodeUtilization: move pods off the most used nodes",
       descheduler(DeschedulerStrategy::kLowNodeUtilization)},
      {"frag-one-pod",
       "FGD simulator's fragOnePod: most fragmented nodes first, one pod each whose removal cuts F most",
       frag_descheduler(FragDeschedulerRule::kFragOnePod)},
      {"frag-multi-pod", "FGD simulator's fragMultiPod: always the most fragmented node's best pod, until the budget",
       frag_descheduler(FragDeschedulerRule::kFragMultiPod)},
      {"cos-sim", "FGD simulator's cosSim: CPU-full nodes with free GPU, one pod each least like the free space",
       frag_descheduler(FragDeschedulerRule::kCosSim)},
  };
  return t;
}

std::vector<std::string> defrag_method_names() {
  std::vector<std::string> out;
  for (const auto& m : defrag_method_table()) out.push_back(m.name);
  return out;
}

std::string defrag_method_name_list() {
  const auto& t = defrag_method_table();
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) out += (i == 0 ? "" : i + 1 == t.size() ? " or " : ", ") + t[i].name;
  return out;
}

void check_defrag_method(std::string_view method) {
  for (const auto& m : defrag_method_table())
    if (m.name == method) return;
  throw std::invalid_argument(fmt::format("unknown defrag method '{}' (known: {})", method, defrag_method_name_list()));
}

DefragPlan plan_by_method(std::string_view method, const ClusterState& state, const DefragGoal& goal,
                          const DefragBudget& budget, const PodMoveInfos& infos, Policy& policy,
                          std::span<const int64_t> node_rank, const PlannerOptions& planner) {
  for (const auto& m : defrag_method_table())
    if (m.name == method) {
      const auto start = std::chrono::steady_clock::now();
      DefragPlan plan = trim_to_value(state, m.plan(state, goal, budget, infos, policy, node_rank, planner), goal,
                                      infos, planner.max_moves_per_gpu);
      // The method's wall time, every copy, re-plan and thread included (the
      // stages' own clocks leave out the state copies between them).
      plan.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return plan;
    }
  check_defrag_method(method);
  return {};
}

}  // namespace gpupack
