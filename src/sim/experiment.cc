#include "sim/experiment.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "defrag/methods.h"
#include "defrag/snapshot.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sim/random.h"

namespace gpupack {

namespace {

// Snapshot of a run's state after its arrivals; failed arrivals are pending.
// Pod names are the trace names, with "-<arrival index>" added to repeats.
void save_arrival_state(const ExperimentSpec& spec, const std::vector<int32_t>& order,
                        const std::vector<Request>& arrivals, const ClusterState& state, const StaticRunResult& res) {
  PodMoveInfos infos(arrivals.size());
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    std::string name = spec.trace.names.at(order[i]);
    if (!seen.insert(name).second) name += "-" + std::to_string(i);
    infos[i].name = std::move(name);
  }
  std::vector<PendingPod> pending;
  for (size_t i = 0; i < res.placements.size(); ++i)
    if (!valid(res.placements[i].node)) pending.push_back({PodId{static_cast<int32_t>(i)}, arrivals[i]});
  write_snapshot(spec.save_state_path, state, infos, pending);
}

}  // namespace

std::vector<StaticRunResult> run_experiment(const ExperimentSpec& spec,
                                            const std::function<void(const ExperimentProgress&)>& progress) {
  if (spec.nodes.empty()) throw std::invalid_argument("the cluster has no nodes");
  if (spec.policies.empty() || spec.seeds.empty()) throw std::invalid_argument("no policy or no seed to run");
  if (spec.node_rank && spec.node_rank->size() != spec.nodes.size())
    throw std::invalid_argument("node rank table does not cover every node");
  auto target =
      std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(spec.trace.requests, spec.trace.model_keys));
  for (const auto& p : spec.policies) make_policy(p, {0, target});  // validate names up front
  if (spec.defrag) {
    check_defrag_method(spec.defrag->method);
    if (!(spec.defrag->budget_fraction >= 0 && spec.defrag->budget_fraction <= 1))
      throw std::invalid_argument("defrag budget must be within 0..100% of running pods");
  }

  const int64_t capacity = ClusterState(spec.nodes).gpu_capacity_milli();
  // Arrivals per seed, shared by every policy.
  std::vector<std::vector<Request>> arrivals(spec.seeds.size());
  std::vector<std::vector<int32_t>> orders(spec.seeds.size());
  size_t arrivals_per_round = 0;
  for (size_t s = 0; s < spec.seeds.size(); ++s) {
    const std::vector<int32_t> order =
        spec.fixed_order ? *spec.fixed_order
                         : sample_static_arrivals(spec.trace.requests, capacity, spec.tune, spec.seeds[s]);
    arrivals[s].reserve(order.size());
    for (int32_t i : order) arrivals[s].push_back(spec.trace.requests.at(i));
    arrivals_per_round += order.size();
    orders[s] = order;
  }

  const size_t jobs = spec.policies.size() * spec.seeds.size();
  std::vector<StaticRunResult> results(jobs);
  ExperimentProgress state{0, jobs, 0, arrivals_per_round * spec.policies.size()};
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  auto worker = [&] {
    while (true) {
      const size_t job = next.fetch_add(1);
      if (job >= jobs) return;
      const size_t p = job / spec.seeds.size(), s = job % spec.seeds.size();
      try {
        auto policy = make_policy(spec.policies[p], {spec.seeds[s], target});
        std::vector<int64_t> rank = spec.node_rank ? *spec.node_rank : seeded_rank(spec.nodes.size(), spec.seeds[s]);
        size_t reported = 0;
        auto on_step = [&](size_t done) {
          std::lock_guard<std::mutex> lock(mu);
          state.arrivals_done += done - reported;
          reported = done;
          if (progress) progress(state);
        };
        std::function<void(ClusterState&, StaticRunResult&)> after;
        if (spec.defrag || spec.on_final_state || (job == 0 && !spec.save_state_path.empty())) {
          after = [&, job, s, rank](ClusterState& st, StaticRunResult& res) {
            if (spec.on_final_state) {
              std::vector<std::string> names;
              names.reserve(orders[s].size());
              for (int32_t i : orders[s]) names.push_back(spec.trace.names.at(static_cast<size_t>(i)));
              spec.on_final_state(job, st, names);
            }
            if (job == 0 && !spec.save_state_path.empty()) save_arrival_state(spec, orders[s], arrivals[s], st, res);
            if (spec.defrag)
              res.defrag = defrag_after_arrivals(st, arrivals[s], res.placements, *policy, rank, *spec.defrag);
          };
        }
        StaticRunResult r = run_static(spec.nodes, arrivals[s], *policy, std::move(rank), *target, on_step, after);
        r.seed = spec.seeds[s];
        r.size_waste_milli = placed_size_waste_milli(arrivals[s], r.placements);
        std::lock_guard<std::mutex> lock(mu);
        state.arrivals_done += arrivals[s].size() - reported;
        ++state.jobs_done;
        results[job] = std::move(r);
        if (progress) progress(state);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>(jobs, spec.threads > 0 ? spec.threads : hw);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace gpupack
