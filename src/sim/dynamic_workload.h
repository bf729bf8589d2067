// Workloads for the dynamic (arrival and departure) simulator: jobs from an
// openb trace, and a seeded generator of gang jobs on a rack-structured
// cluster.
//
// Contract:
// - A DynamicJob is one pod (one member) or a gang; times in seconds.
//   `runtime_s` is how long it runs once started (kRunsForever = never
//   leaves); `estimate_s` is what the scheduler is told (nullopt = none).
// - jobs_from_openb(): one single-pod job per trace pod, submitted at its
//   creation_time (missing: 0), runtime = deletion_time - creation_time;
//   pods naming the same `gang` form one job at its first member's place
//   (that member's times and model key; min_member from the first member
//   that gives one).
//   Rules: a missing deletion_time means the pod never leaves (and gives no
//   estimate); a deletion_time earlier than creation_time gives runtime 0
//   (counted in `bad_times`). The estimate is the exact runtime (the trace
//   knows it). Priority 0, queue "default". O(pods).
// - generate_gang_workload(): deterministic in its options. Interarrival
//   times are exponential, shapes (members x GPUs per member, GPU milli per
//   GPU; CPU and memory scale with GPUs x milli / 1000) drawn from a
//   weighted table, runtimes log-normal (clamped), priorities from a weighted
//   table; a fraction of jobs gives no estimate, the rest an estimate of
//   runtime x U[1, max_overestimate] rounded up (never below the runtime).
// - gang_cluster(): `nodes` identical nodes of `gpus_per_node` GPUs, racks
//   of `nodes_per_rack` consecutive nodes (domain names "rack-<k>").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/openb.h"
#include "model/node.h"
#include "model/request.h"

namespace gpupack {

constexpr int64_t kRunsForever = INT64_MAX;

struct DynamicJob {
  std::string name;
  std::string queue = "default";
  int priority = 0;
  std::vector<Request> members;           // one per pod
  std::vector<std::string> member_names;  // one per pod, or empty (then "<name>-<i>")
  int min_member = 0;                     // 0 = all
  std::string model_key;                  // FGD target class key ("" = any model)
  int64_t submit_s = 0;
  int64_t runtime_s = 0;
  std::optional<int64_t> estimate_s;
};

struct DynamicWorkload {
  std::vector<DynamicJob> jobs;  // sorted by submit_s (stable)
  int bad_times = 0;             // openb pods with deletion before creation
};

DynamicWorkload jobs_from_openb(const std::vector<TracePod>& pods);

struct GangShape {
  int members = 1;
  int gpus_per_member = 1;
  double weight = 1;
  int32_t gpu_milli = kGpuMilliPerGpu;  // per GPU; < 1000 (a shared GPU) only with 1 GPU per member
};

struct GangWorkloadOptions {
  uint64_t seed = 42;
  int jobs = 2000;
  double mean_interarrival_s = 110;
  std::vector<GangShape> shapes = {{1, 1, 0.35}, {1, 2, 0.10}, {1, 4, 0.10}, {1, 8, 0.10},
                                   {2, 8, 0.12}, {4, 8, 0.10}, {8, 8, 0.08}, {16, 8, 0.05}};
  double median_runtime_s = 1800;
  double runtime_sigma = 1.0;  // of log(runtime)
  int64_t min_runtime_s = 60, max_runtime_s = 86400;
  std::vector<std::pair<int, double>> priorities = {{0, 0.7}, {1, 0.2}, {2, 0.1}};
  double no_estimate_fraction = 0.2;
  double max_overestimate = 2.0;
  int64_t cpu_milli_per_gpu = 8000;
  int64_t memory_mib_per_gpu = 65536;
};

DynamicWorkload generate_gang_workload(const GangWorkloadOptions& options);

struct GangCluster {
  std::vector<NodeSpec> nodes;
  std::vector<std::string> rack_of_node;
};
GangCluster gang_cluster(int nodes, int gpus_per_node, int nodes_per_rack);

}  // namespace gpupack
