#include "sim/dynamic_experiment.h"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "policy/registry.h"
#include "sim/random.h"

namespace gpupack {
namespace {

std::shared_ptr<const TargetWorkload> target_of(const DynamicWorkload& workload) {
  std::vector<Request> requests;
  std::vector<std::string> keys;
  for (const DynamicJob& j : workload.jobs)
    for (const Request& r : j.members) {
      requests.push_back(r);
      keys.push_back(j.model_key);
    }
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(requests, keys));
}

}  // namespace

std::vector<DynamicExperimentRun> run_dynamic_experiment(const DynamicExperimentSpec& spec,
                                                         const std::function<void(const DynamicExperimentRun&)>& done) {
  if (spec.policies.empty() || spec.seeds.empty()) throw std::invalid_argument("no policy or no seed to run");
  if (spec.workload.has_value() == spec.generated.has_value())
    throw std::invalid_argument("a dynamic experiment needs exactly one workload: fixed or generated");
  const auto no_target = std::make_shared<const TargetWorkload>();
  for (const auto& p : spec.policies) make_policy(p, {0, no_target});  // names checked before any run

  // One workload and target per seed (the same one for a fixed workload).
  std::vector<DynamicWorkload> workloads;
  std::vector<std::shared_ptr<const TargetWorkload>> targets;
  for (uint64_t seed : spec.seeds) {
    if (spec.workload) {
      if (workloads.empty()) workloads.push_back(*spec.workload), targets.push_back(target_of(workloads.back()));
      continue;
    }
    GangWorkloadOptions g = *spec.generated;
    g.seed = seed;
    workloads.push_back(generate_gang_workload(g));
    targets.push_back(target_of(workloads.back()));
  }
  std::vector<DynamicExperimentRun> runs;
  for (const std::string& name : spec.policies) {
    for (size_t k = 0; k < spec.seeds.size(); ++k) {
      const uint64_t seed = spec.seeds[k];
      const size_t w = spec.workload ? 0 : k;
      auto policy = make_policy(name, {seed, targets[w]});
      DynamicExperimentRun run;
      run.policy = name;
      run.seed = seed;
      run.label = name + spec.label_suffix + (spec.seeds.size() > 1 ? fmt::format(" seed {}", seed) : "");
      if (!spec.node_rank.empty() && spec.node_rank.size() != spec.nodes.size())
        throw std::invalid_argument("node ranks do not cover every node");
      run.result = run_dynamic(spec.nodes, workloads[w], *policy,
                               spec.node_rank.empty() ? seeded_rank(spec.nodes.size(), seed) : spec.node_rank,
                               *targets[w], spec.options);
      for (const DynamicJob& j : workloads[w].jobs) {
        std::vector<std::string> names = j.member_names;
        for (size_t m = names.size(); m < j.members.size(); ++m) names.push_back(fmt::format("{}-{}", j.name, m));
        run.member_names.push_back(std::move(names));
      }
      run.summary = summarize_dynamic(run.result, workloads[w], run.label);
      run.jobs = workloads[w].jobs.size();
      if (done) done(run);
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

}  // namespace gpupack
