// Keys and a test the move searches share (defrag/planner.h, defrag/swaps.h,
// defrag/chains.h).
//
// Contract:
// - ShapeKey: a request by what its placement depends on (CPU, memory, GPU
//   count and share, allowed models); two pending pods with the same key
//   fit exactly the same places.
// - gpu_key(): one number per (node, GPU) (fewer than 64 GPUs per node).
// - trade_movable(): a bound pod the trade searches may move: not marked
//   immovable, one GPU, a plain request, on a node without a hardware setup.
//   Pure functions of their arguments.
#pragma once

#include <cstdint>
#include <tuple>

#include "defrag/budget.h"
#include "model/cluster_state.h"

namespace gpupack {

using ShapeKey = std::tuple<int64_t, int64_t, int32_t, int32_t, ModelMask>;

inline ShapeKey shape_key(const Request& r) {
  return {r.cpu_milli, r.memory_mib, r.gpu_count, r.gpu_milli, r.allowed_models};
}

inline int64_t gpu_key(NodeId n, int g) { return int64_t{static_cast<int>(n)} * 64 + g; }

inline bool trade_movable(const ClusterState& state, const PodMoveInfos& infos, PodId p) {
  if (move_info(infos, p).immovable) return false;
  const Request& r = state.request(p);
  return r.gpu_count == 1 && r.is_plain() && !state.has_hardware_setup(state.assignment(p).node);
}

}  // namespace gpupack
