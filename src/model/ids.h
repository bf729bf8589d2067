// Strong integer ids for nodes and pods.
//
// Contract: an id is an index into the owning container (ClusterState for
// nodes, the caller's pod table for pods). Ids are plain values: cheap to copy,
// comparable, and not convertible to each other by accident. `index(id)` gives
// the raw index for array access.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpupack {

enum class NodeId : int32_t {};
enum class PodId : int32_t {};

constexpr NodeId kNoNode = NodeId{-1};

constexpr size_t index(NodeId id) { return static_cast<size_t>(id); }
constexpr size_t index(PodId id) { return static_cast<size_t>(id); }
constexpr bool valid(NodeId id) { return static_cast<int32_t>(id) >= 0; }

}  // namespace gpupack
