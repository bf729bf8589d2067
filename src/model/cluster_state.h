// ClusterState: everything gpupack knows about a cluster, in flat arrays.
//
// Contract:
// - Nodes are fixed at construction; ids are 0..node_count()-1 in input order.
// - The only writers are bind(), unbind() and rollback(). bind() checks that
//   the assignment fits (CPU, host memory, model, each GPU's free milli) and
//   changes nothing when it does not; it never leaves a GPU above 1000 milli
//   or CPU/memory below zero.
// - Every change is logged; checkpoint() marks the log and rollback(mark)
//   undoes every change after it exactly (what-if scoring, gang transactions,
//   defrag search). commit() forgets the log when no checkpoint is needed.
// - version(node) is a stamp drawn from a process-wide counter whenever the
//   node's state changes (and at construction). No two different node states,
//   in this or any other ClusterState, share a stamp, while a copy keeps its
//   source's stamps; so callers may cache per-node results by version alone.
// - Read accessors are O(1) and allocation-free. Not thread-safe for writes;
//   concurrent reads are fine.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_catalog.h"
#include "model/ids.h"
#include "model/node.h"
#include "model/request.h"
#include "model/status.h"

namespace gpupack {

// Pods on a node by GPU shape: tag 0 = shared (fractional) pods, tag k = pods
// of k whole GPUs (k capped at kMaxShapeTag). CPU-only pods are not counted.
constexpr int kMaxShapeTag = 16;
using ShapeCounts = std::array<uint16_t, kMaxShapeTag + 1>;
int shape_tag(const Request& r);  // -1 for CPU-only requests

class ClusterState {
 public:
  using Checkpoint = size_t;

  // Throws std::invalid_argument (naming the node) on an impossible node:
  // negative resources, more than kMaxGpusPerNode GPUs, duplicate names.
  explicit ClusterState(std::vector<NodeSpec> nodes);

  // --- nodes ---
  int node_count() const { return static_cast<int>(names_.size()); }
  std::string_view node_name(NodeId n) const { return names_[index(n)]; }
  int64_t cpu_total_milli(NodeId n) const { return cpu_total_[index(n)]; }
  int64_t cpu_free_milli(NodeId n) const { return cpu_free_[index(n)]; }
  int64_t memory_total_mib(NodeId n) const { return mem_total_[index(n)]; }
  int64_t memory_free_mib(NodeId n) const { return mem_free_[index(n)]; }
  int gpu_count(NodeId n) const { return gpu_count_[index(n)]; }
  GpuModelId gpu_model(NodeId n) const { return gpu_model_[index(n)]; }
  // Free milli of each GPU of the node, GPU 0 first.
  std::span<const int32_t> gpu_free_milli(NodeId n) const {
    return {gpu_free_.data() + gpu_begin_[index(n)], static_cast<size_t>(gpu_count_[index(n)])};
  }
  int64_t gpu_free_total_milli(NodeId n) const { return gpu_free_total_[index(n)]; }
  const ShapeCounts& shape_counts(NodeId n) const { return shapes_[index(n)]; }
  uint64_t version(NodeId n) const { return version_[index(n)]; }
  const NodeSpec& spec(NodeId n) const { return specs_[index(n)]; }

  // --- cluster totals ---
  int64_t gpu_capacity_milli() const { return gpu_capacity_milli_; }
  int64_t gpu_used_milli() const { return gpu_used_milli_; }
  int total_gpus() const { return static_cast<int>(gpu_free_.size()); }

  // --- pods ---
  bool is_bound(PodId p) const { return index(p) < pods_.size() && pods_[index(p)].bound; }
  // Valid only while is_bound(p).
  const Assignment& assignment(PodId p) const { return pods_[index(p)].assignment; }
  const Request& request(PodId p) const { return pods_[index(p)].request; }
  int bound_pod_count() const { return bound_pods_; }
  // Ids of the pods bound now, ascending (O(pods)).
  std::vector<PodId> bound_pods() const;

  // --- writes ---
  // Checks the fit first and changes nothing if it fails.
  Status bind(PodId pod, const Request& req, const Assignment& where);
  Status unbind(PodId pod);
  Checkpoint checkpoint() const { return log_.size(); }
  void rollback(Checkpoint mark);
  void commit() { log_.clear(); }

  // Would `req` fit at `where` now? Same checks as bind(), no change.
  Status check_fit(const Request& req, const Assignment& where) const;

  // Recomputes every derived quantity from the bound pods and compares; an
  // empty result means all invariants hold. O(nodes + GPUs + pods).
  std::vector<std::string> check_invariants() const;

 private:
  struct PodRecord {
    Request request;
    Assignment assignment;
    bool bound = false;
  };
  struct LogEntry {
    bool was_bind;
    PodId pod;
    Request request;
    Assignment assignment;
  };

  void apply(PodId pod, const Request& req, const Assignment& where, int sign);

  std::vector<NodeSpec> specs_;
  std::vector<std::string> names_;
  std::vector<int64_t> cpu_total_, cpu_free_, mem_total_, mem_free_;
  std::vector<int32_t> gpu_count_;
  std::vector<GpuModelId> gpu_model_;
  std::vector<int32_t> gpu_begin_;
  std::vector<int32_t> gpu_free_;
  std::vector<int64_t> gpu_free_total_;
  std::vector<ShapeCounts> shapes_;
  std::vector<uint64_t> version_;
  int64_t gpu_capacity_milli_ = 0;
  int64_t gpu_used_milli_ = 0;

  std::vector<PodRecord> pods_;
  int bound_pods_ = 0;
  std::vector<LogEntry> log_;
};

}  // namespace gpupack
