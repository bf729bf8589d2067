// Readers for the openb trace format (Alibaba cluster-trace-gpu-v2023, as used
// by the FGD paper's simulator) and the exact-replay side files.
//
// Contract: each reader loads a whole file or throws InputError naming file,
// line, column and value; nothing is returned half-loaded. Node files have
// columns `sn,cpu_milli,memory_mib,gpu,model` (model empty for CPU-only
// nodes). Pod files have `name,cpu_milli,memory_mib,num_gpu,gpu_milli` and
// optionally `gpu_spec` (`|`-separated allowed models), `qos`, `pod_phase`,
// `creation_time`, `deletion_time`, `scheduled_time` (seconds), and
// `gang`, `gang_min_member` (pods naming the same gang form one job of the
// dynamic simulator; min 0 = every member). Unknown GPU models and a pod name
// given twice are errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/request.h"
#include "model/workload.h"

namespace gpupack {

struct TracePod {
  std::string name;
  Request request;
  std::string gpu_spec;  // as written in the trace ("" = any model)
  std::string qos;
  std::string phase;
  int64_t creation_time_s = -1;  // -1 = not given
  int64_t deletion_time_s = -1;
  int64_t scheduled_time_s = -1;
  std::string gang;         // "" = a pod on its own
  int gang_min_member = 0;  // 0 = every member
};

std::vector<NodeSpec> read_openb_nodes(const std::string& path);
std::vector<TracePod> read_openb_pods(const std::string& path);

// The pods as a Workload (names, requests, gpu_spec keys), in file order.
Workload to_workload(const std::vector<TracePod>& pods);

// Parses a `|`-separated model list into a mask; throws std::invalid_argument
// naming the unknown model.
ModelMask parse_model_list(const std::string& spec);

// seed42/order.csv: `idx,pod` with idx 0..n-1 in order; returns pod names.
std::vector<std::string> read_arrival_order(const std::string& path);

// seed42/node_rank.csv: `node,rank`; returns (node name, rank) pairs.
struct NodeRank {
  std::string node;
  int64_t rank;
};
std::vector<NodeRank> read_node_rank(const std::string& path);

}  // namespace gpupack
