// Writers for a defrag plan: a table for people, JSON for tools, and an
// eviction list a Kubernetes operator can apply.
//
// Contract: pure functions of (plan, the state the plan was made for, move
// metadata); node names come from the state, pod names from `infos`
// (pod-<id> when absent). Formats are documented in docs/DEFRAG.md:
// - format_plan_table(): one row per step (kind, pod, from node[GPUs], to
//   node[GPUs], cost, GPU allocation % and whole free GPUs after the step),
//   then a summary line (moves, pods and GPU milli admitted, moves per GPU
//   admitted, allocation, free GPUs and nodes before and after, and the
//   most whole free GPUs any plan could end with, repack_free_gpus_max()).
// - plan_to_json(): {"algorithm","goal","moves","moved_gpu_milli","cost",
//   "moves_per_gpu_admitted","repack_free_gpus_max","before","after","steps":[...],
//   "not_admitted":[...]}.
// - moves_per_gpu_admitted(): the plan's moves over the GPUs (1000 milli)
//   its admissions take; none when it moves nothing or admits nothing.
// - repack_free_gpus_max(): the whole free GPUs of `state` plus the most any
//   repack of its bound pods frees (frag/cluster_metrics.h repack_bound; the
//   fluid packing LP of their per-GPU milli). No plan ends with more whole
//   free GPUs, whatever it moves or admits (admitted pods only add items);
//   rounded down, as a count of GPUs is whole.
//   None where the repack bound is left out (time-slicing or MIG GPUs, MIG
//   devices in use). One LP, 0.2 ms on openb.
// - eviction_list(): a Kubernetes List of policy/v1 Eviction objects, one per
//   migrate/evict step in plan order, annotated with the planned target
//   (gpupack.io/target-node, gpupack.io/target-gpus, gpupack.io/move-kind,
//   gpupack.io/step). Remaps and admissions are not evictions and are left out.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "defrag/plan.h"

namespace gpupack {

std::optional<double> moves_per_gpu_admitted(const DefragPlan& plan);
std::optional<int64_t> repack_free_gpus_max(const ClusterState& state);
std::string format_plan_table(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos);
nlohmann::json plan_to_json(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos);
nlohmann::json eviction_list(const DefragPlan& plan, const ClusterState& state, const PodMoveInfos& infos);

}  // namespace gpupack
