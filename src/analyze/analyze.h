// Cluster analysis behind `gpupack analyze`: allocation and fragmentation per
// pool, stranded GPU capacity, requested vs observed GPU memory per workload,
// and (through a hook) a defragmentation plan.
//
// Contract:
// - analyze_cluster() takes parsed kubectl nodes and pods (io/kubectl.h) and
//   optionally dcgm-exporter observations (io/dcgm.h). Every running pod is
//   charged to its node whoever scheduled it, by the code `gpupack serve`
//   uses (analyze/cluster_model.h charge_running_pods, frag/cluster_metrics.h),
//   so both report the same allocation, fragmentation and stranded GPUs;
//   pods that over-commit their node are counted in `conflicts`.
// - Stranded: a GPU with free capacity that no pending pod (or, with none
//   pending, no request of the typical workload) can use; its free memory is
//   DCGM's FB_FREE when observed, else capacity minus the memory of the pods
//   assigned to it.
// - Right-sizing: for each bound GPU pod with DCGM data, requested GPU memory
//   per GPU (gpupack.io/gpu-memory-mib, else its share of the GPU) against
//   the largest FB_USED seen on its GPUs. Advice "over-sized" when observed
//   < 50% of requested, "under-sized" when above requested, else "ok"; the
//   suggestion is observed x 1.2 rounded up to 1 GiB.
// - Repack bound (frag/cluster_metrics.h repack_bound): the most GPUs a
//   repack of the running pods could free beyond the free ones, and the free
//   capacity their sizes force, GPU milli alone; absent where a pod's charge
//   depends on the GPU it lands on (time-slicing or MIG GPUs, MIG devices).
// - Defragmentation: plan_admission() (analyze/defrag_input.h) fills
//   `defrag`; `gpupack analyze` adds it to the report.
// - Pure. O(nodes x GPUs x request shapes + pods).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frag/cluster_metrics.h"
#include "io/dcgm.h"
#include "io/kubectl.h"
#include "model/cluster_state.h"

namespace gpupack {

struct PoolReport {
  std::string model;
  int nodes = 0;
  int gpus = 0;
  int64_t capacity_milli = 0;
  int64_t allocated_milli = 0;
  double fragmentation_milli = 0;
  double fragmentation_ratio = 0;  // of the free milli
  int stranded_gpus = 0;
  int64_t stranded_memory_mib = 0;
};

struct StrandedGpu {
  std::string node;
  int gpu = 0;
  std::string model;
  int32_t free_milli = 0;
  int64_t free_memory_mib = 0;
  bool memory_observed = false;  // from DCGM
};

struct RightSize {
  std::string namespace_name, pod, workload, node;
  int64_t requested_mib = 0;  // per GPU
  int64_t observed_mib = 0;   // largest FB_USED on its GPUs
  std::string advice;         // over-sized | under-sized | ok
  int64_t suggested_mib = 0;
};

struct DefragReport {
  bool available = false;
  std::string note;     // why there is no plan, when there is none
  nlohmann::json plan;  // defrag/plan_writers.h plan_to_json
  std::string text;     // the plan for people: steps, then the pods held in place
};

struct AnalysisReport {
  std::vector<PoolReport> pools;
  std::vector<StrandedGpu> stranded;
  std::vector<RightSize> right_size;
  std::map<std::string, int> pending_by_reason;
  std::vector<std::string> unattributed;
  int conflicts = 0;  // running pods that did not fit what their node had left
  int nodes = 0;
  int bound_pods = 0;
  int64_t gpus = 0, gpus_in_use = 0, gpus_free = 0;  // GPUs; in use: any milli allocated; free: none
  std::optional<ClusterMetrics::Repack> repack;
  DefragReport defrag;
  nlohmann::json gpu_map;  // analyze/gpu_map.h: every node and GPU, for --format html
};

AnalysisReport analyze_cluster(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                               const DcgmObservations* dcgm);

std::string format_text(const AnalysisReport& r);
// One self-contained page: the GPU map and the text report.
std::string format_html(const AnalysisReport& r, const std::string& title);
nlohmann::json to_json(const AnalysisReport& r);

}  // namespace gpupack
