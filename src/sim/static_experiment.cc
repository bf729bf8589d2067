#include "sim/static_experiment.h"

#include <chrono>

#include "frag/packing_prices.h"
#include "model/cluster_state.h"
#include "sched/scheduler.h"
#include "sim/random.h"

namespace gpupack {

std::vector<int32_t> sample_static_arrivals(std::span<const Request> sorted_trace, int64_t capacity_milli, double tune,
                                            uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> order(sorted_trace.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  rng.shuffle(std::span<int32_t>(order));
  const int64_t target = static_cast<int64_t>(tune * static_cast<double>(capacity_milli));
  int64_t total = 0;
  for (const Request& r : sorted_trace) total += r.total_gpu_milli();
  if (sorted_trace.empty()) return order;
  if (total < target) {
    while (true) {
      const int32_t pick = static_cast<int32_t>(rng.below(sorted_trace.size()));
      if (total + sorted_trace[pick].gpu_milli > target) break;
      order.push_back(pick);
      total += sorted_trace[pick].total_gpu_milli();
    }
  } else {
    while (total > target && !order.empty()) {
      const size_t victim = rng.below(order.size());
      total -= sorted_trace[order[victim]].total_gpu_milli();
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(victim));
    }
  }
  return order;
}

double StaticRunResult::final_alloc_pct() const {
  if (steps.empty() || capacity_milli == 0) return 0;
  return 100.0 * static_cast<double>(steps.back().used_milli) / static_cast<double>(capacity_milli);
}

StaticRunResult run_static(const std::vector<NodeSpec>& nodes, std::span<const Request> arrivals, Policy& policy,
                           std::vector<int64_t> node_rank, const TargetWorkload& frag_target,
                           const std::function<void(size_t)>& progress,
                           const std::function<void(ClusterState&, StaticRunResult&)>& after_arrivals) {
  const auto start = std::chrono::steady_clock::now();
  ClusterState state(nodes);
  state.set_tie_order(node_rank);  // decisions by node class (sched/scheduler.h)
  Scheduler scheduler(policy, std::move(node_rank));
  scheduler.set_explain_failures(false);
  FragTracker frag(frag_target, state);
  StaticRunResult out;
  out.policy = std::string(policy.name());
  out.capacity_milli = state.gpu_capacity_milli();
  out.steps.reserve(arrivals.size());
  out.placements.reserve(arrivals.size());
  int64_t arrived = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Request& req = arrivals[i];
    arrived += req.total_gpu_milli();
    const Decision d = scheduler.schedule(state, PodId{static_cast<int32_t>(i)}, req);
    if (d.placed()) {
      frag.refresh(state, d.assignment.node);
    } else {
      ++out.failed_pods;
    }
    out.placements.push_back(d.assignment);
    out.steps.push_back({arrived, state.gpu_used_milli(), frag.total_milli()});
    if (progress && (i + 1) % 500 == 0) progress(i + 1);
  }
  state.commit();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (after_arrivals) after_arrivals(state, out);
  return out;
}

std::optional<double> placed_size_waste_milli(std::span<const Request> arrivals,
                                              std::span<const Assignment> placements) {
  if (!gpu_use_is_milli(arrivals)) return std::nullopt;
  std::vector<Request> placed;
  for (size_t i = 0; i < arrivals.size() && i < placements.size(); ++i)
    if (placements[i].node != kNoNode) placed.push_back(arrivals[i]);
  return packing_waste_milli(placed);
}

}  // namespace gpupack
