// Scale benchmark: openb-like synthetic clusters (sim/synthetic.h: the same
// mix of GPU models, CPU and pod shapes as openb) at several sizes, the
// FGD paper's static method (arrivals to 130% of capacity, one seed), for
// each policy: model build time, decisions per second on one core, p50/p99
// of one decision, peak resident memory, and the node classes at the end.
//
//   scale_bench [--sizes 1000,10000,100000] [--policies fgd,bestfit,...]
//               [--seed 42] [--walk] [--class-walk] [--max-arrivals N]
//               [--score-threads N]
//
// --walk also runs each case with the full walk over the nodes (node
// classes off) on the same arrivals and checks that every decision is the
// same; --class-walk does the same with node classes walked one by one (the
// per-shape class index off); --max-arrivals caps the arrivals (for the
// walks at 100,000 nodes); --score-threads N (with --walk) runs the full
// walk once more with parallel scoring on N threads (Scheduler::
// set_work_pool), checks every decision is the same, and reports the
// one-thread walk's time over the parallel walk's (par_x).
// Flags of Google Benchmark (bench/run.sh passes them) are ignored; without
// --sizes it runs 1,000 and 10,000 nodes.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "policy/registry.h"
#include "sched/scheduler.h"
#include "sim/random.h"
#include "sim/static_experiment.h"
#include "sim/synthetic.h"
#include "util/work_pool.h"

namespace gpupack {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

struct CaseResult {
  double build_s = 0, run_s = 0, p50_us = 0, p99_us = 0;
  double feasible_share = 0;  // mean share of the nodes that could take the pod
  size_t decisions = 0, placed = 0, classes = 0;
  std::vector<Assignment> placements;
};

CaseResult run_case(const std::vector<NodeSpec>& nodes, const std::vector<Request>& arrivals,
                    const std::shared_ptr<const TargetWorkload>& target, const std::string& policy_name, uint64_t seed,
                    bool by_class, bool class_index = true, WorkPool* pool = nullptr) {
  CaseResult r;
  auto policy = make_policy(policy_name, {seed, target});
  const auto t0 = std::chrono::steady_clock::now();
  ClusterState state(nodes);
  std::vector<int64_t> rank = seeded_rank(nodes.size(), seed);
  state.set_tie_order(rank);
  r.build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Scheduler scheduler(*policy, std::move(rank));
  scheduler.set_explain_failures(false);
  scheduler.set_use_node_classes(by_class);
  scheduler.set_use_class_index(class_index);
  scheduler.set_work_pool(pool);
  std::vector<double> us;
  us.reserve(arrivals.size());
  r.placements.reserve(arrivals.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const auto a = std::chrono::steady_clock::now();
    const Decision d = scheduler.schedule(state, PodId{static_cast<int32_t>(i)}, arrivals[i]);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    r.placed += d.placed() ? 1 : 0;
    r.feasible_share += static_cast<double>(d.feasible_nodes) / static_cast<double>(nodes.size());
    r.placements.push_back(d.assignment);
  }
  r.run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.decisions = arrivals.size();
  if (r.decisions > 0) r.feasible_share /= static_cast<double>(r.decisions);
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    r.p50_us = us[us.size() / 2];
    r.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  }
  r.classes = state.node_classes().classes().size();
  return r;
}

int run(int argc, char** argv) {
  std::vector<int> sizes = {1000, 10000};
  std::vector<std::string> policies;
  uint64_t seed = 42;
  bool walk = false, class_walk = false;
  size_t max_arrivals = 0;
  int score_threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a.rfind("--benchmark_", 0) == 0) continue;
    if (a == "--sizes") {
      sizes.clear();
      for (const std::string& s : split(value())) sizes.push_back(std::stoi(s));
    } else if (a == "--policies") {
      policies = split(value());
    } else if (a == "--seed") {
      seed = std::stoull(value());
    } else if (a == "--walk") {
      walk = true;
    } else if (a == "--class-walk") {
      class_walk = true;
    } else if (a == "--max-arrivals") {
      max_arrivals = std::stoull(value());
    } else if (a == "--score-threads") {
      score_threads = std::stoi(value());
    } else {
      throw std::invalid_argument("unknown argument " + a);
    }
  }
  if (policies.empty()) policies = policy_names();
  if (score_threads > 0 && !walk) throw std::invalid_argument("--score-threads needs --walk");
  std::unique_ptr<WorkPool> pool = score_threads > 1 ? std::make_unique<WorkPool>(score_threads) : nullptr;
  std::printf("%-8s %-14s %9s %8s %10s %12s %9s %9s %9s %8s %8s %7s %7s %7s\n", "nodes", "policy", "arrivals",
              "build_s", "run_s", "decisions/s", "p50_us", "p99_us", "peak_MiB", "classes", "feasible", "walk_x",
              "cwalk_x", "par_x");
  for (int n : sizes) {
    SyntheticOptions opt;
    opt.node_count = n;
    const std::vector<NodeSpec> nodes = synthetic_nodes(opt);
    const int64_t capacity = ClusterState(nodes).gpu_capacity_milli();
    Workload trace = synthetic_workload(opt, capacity);
    trace.sort_by_name();
    std::vector<Request> arrivals;
    for (int32_t i : sample_static_arrivals(trace.requests, capacity, 1.3, seed)) {
      if (max_arrivals > 0 && arrivals.size() >= max_arrivals) break;
      arrivals.push_back(trace.requests[static_cast<size_t>(i)]);
    }
    auto target =
        std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(trace.requests, trace.model_keys));
    for (const std::string& p : policies) {
      const CaseResult r = run_case(nodes, arrivals, target, p, seed, true);
      std::string walk_x = "-", par_x = "-";
      if (walk) {
        const CaseResult w = run_case(nodes, arrivals, target, p, seed, false);
        if (w.placements != r.placements) {
          std::fprintf(stderr, "scale_bench: %s at %d nodes: node classes and the walk decide differently\n", p.c_str(),
                       n);
          return 1;
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", w.run_s / r.run_s);
        walk_x = buf;
        if (pool) {
          const CaseResult par = run_case(nodes, arrivals, target, p, seed, false, true, pool.get());
          if (par.placements != w.placements) {
            std::fprintf(stderr, "scale_bench: %s at %d nodes: parallel scoring and the walk decide differently\n",
                         p.c_str(), n);
            return 1;
          }
          std::snprintf(buf, sizeof buf, "%.2f", w.run_s / par.run_s);
          par_x = buf;
        }
      }
      std::string class_walk_x = "-";
      if (class_walk) {
        const CaseResult w = run_case(nodes, arrivals, target, p, seed, true, false);
        if (w.placements != r.placements) {
          std::fprintf(stderr, "scale_bench: %s at %d nodes: the class index and the class walk decide differently\n",
                       p.c_str(), n);
          return 1;
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", w.run_s / r.run_s);
        class_walk_x = buf;
      }
      std::printf("%-8d %-14s %9zu %8.3f %10.2f %12.0f %9.1f %9.1f %9.0f %8zu %7.1f%% %7s %7s %7s\n", n, p.c_str(),
                  r.decisions, r.build_s, r.run_s, static_cast<double>(r.decisions) / r.run_s, r.p50_us, r.p99_us,
                  peak_rss_mib(), r.classes, 100.0 * r.feasible_share, walk_x.c_str(), class_walk_x.c_str(),
                  par_x.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpupack

int main(int argc, char** argv) {
  try {
    return gpupack::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scale_bench: %s\n", e.what());
    return 2;
  }
}
