// Seeded synthetic hardware experiment: a mixed inference + training workload
// on nodes of 8 x A100-80GB configured in MIG, MPS or mixed modes, placed once
// with the naive first-free MIG slot choice and once with the MIG-aware one.
//
// Contract: deterministic in (options). Pods arrive in a seeded random order
// and are placed one at a time (never removed) by the Scheduler with the
// given node policy (default firstfit, so nodes fill in order and "GPUs
// needed" is the packing the in-node choice reaches). Reported per run: pods
// placed and failed, GPUs holding at least one pod ("GPUs needed"), and the
// allocation (charged milli / capacity) over the used GPUs and the cluster.
// O(pods x nodes x in-node placement cost). See docs/HARDWARE.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/workload.h"
#include "policy/gpu_choice.h"

namespace gpupack {

enum class HwClusterMode { kMig, kMps, kMixed };
std::string_view to_string(HwClusterMode m);

struct HwExperimentOptions {
  int node_count = 100;
  int pod_count = 1800;
  uint64_t seed = 42;
  std::string node_policy = "firstfit";
};

// Per node of 8 GPUs: MIG = 8 dynamic MIG GPUs; MPS = 4 MPS (4 replicas) +
// 4 exclusive; mixed = 4 MIG + 2 MPS (4 replicas) + 2 exclusive. NVLink
// domains of 4 GPUs, two NUMA nodes.
std::vector<NodeSpec> hw_experiment_nodes(HwClusterMode mode, int node_count);
// 70% inference (40% 1g.10gb-, 15% 1g.20gb-, 15% 2g.20gb-sized, by need,
// class batch-inference) and 30% training (10% each 3g.40gb-, 4g.40gb- and
// 7g.80gb-sized, whole-GPU milli so exclusive GPUs can host them, class
// training), in a seeded order.
Workload hw_experiment_workload(const HwExperimentOptions& options);

struct HwRunResult {
  HwClusterMode mode = HwClusterMode::kMig;
  MigSlotRule rule = MigSlotRule::kMigAware;
  int pods = 0;
  int placed = 0;
  int failed = 0;
  int gpus_used = 0;
  int gpus_total = 0;
  double alloc_used_gpus_pct = 0;  // charged milli / (GPUs used x 1000)
  double alloc_cluster_pct = 0;    // charged milli / cluster capacity
};

HwRunResult run_hw_experiment(HwClusterMode mode, MigSlotRule rule, const HwExperimentOptions& options);

// Markdown table of the runs.
std::string format_hw_results(const std::vector<HwRunResult>& runs);

}  // namespace gpupack
