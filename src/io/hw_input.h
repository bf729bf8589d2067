// Hardware input formats: a cluster description (YAML node pools with model,
// count, NUMA/PCIe/NVLink topology, GPU sharing modes and MIG layouts) and a
// workload file (CSV or YAML) carrying every Request field.
//
// Contract: each reader loads a whole file or throws InputError naming the
// file, the line (YAML: of the offending key or value; CSV: line and
// column) and the value; nothing half-loaded is returned. Formats are
// documented in docs/HARDWARE.md with examples in examples/hardware/.
// `mig_inventory` turns a cluster's MIG-capable GPUs into the repartition
// planner's input (fixed layouts as they are; dynamic MIG GPUs as idle,
// unpartitioned; other modes as MIG disabled). Pure, single-threaded.
#pragma once

#include <string>
#include <vector>

#include "mig/repartition.h"
#include "model/node.h"
#include "model/workload.h"

namespace gpupack {

struct HwCluster {
  std::vector<NodeSpec> nodes;
  // Per node, per GPU: instances marked in use ("3g.40gb@0*"), parallel to
  // the GPU's fixed MIG layout; empty when none is marked.
  std::vector<std::vector<std::vector<bool>>> mig_in_use;
};

HwCluster read_hw_cluster(const std::string& path);
HwCluster parse_hw_cluster(const std::string& yaml_text, const std::string& source_name);

// CSV (header: name,cpu_milli,memory_mib,num_gpu,gpu_milli plus optional
// hardware columns) or YAML (`pods:` list), chosen by the file extension.
Workload read_hw_workload(const std::string& path);
Workload parse_hw_workload_yaml(const std::string& yaml_text, const std::string& source_name);

std::vector<MigGpuInventory> mig_inventory(const HwCluster& cluster);

// Applies a repartition plan to the cluster description: every changed GPU
// becomes a fixed-layout MIG GPU holding the plan's `after` instances (or,
// when the plan disables MIG, a shared GPU). Throws std::invalid_argument
// when the plan names a node or GPU the cluster lacks.
void apply_mig_plan(HwCluster& cluster, const MigRepartitionPlan& plan);

// Demand file (YAML): `demand: {A100-80GB: {1g.10gb: 12, 3g.40gb: 2}}`.
MigDemand read_mig_demand(const std::string& path);

}  // namespace gpupack
