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
// - Hardware (docs/HARDWARE.md): each GPU also has a sharing mode, free GPU
//   memory, free bandwidth and L2 shares, an MPS client count and, on MIG
//   GPUs, a MigGpuState (plus which instances are busy); each node has its
//   GPUs' NUMA node / PCIe switch / NVLink domain and CPU and memory per NUMA
//   node. A plain request (Request::is_plain) on a node without hardware
//   setup takes exactly the openb checks and charges; anything else is also
//   checked per GPU by mode, and bind() refuses with the failed dimension.
// - node_classes() groups the nodes by identical state (model/node_classes.h),
//   kept current by every write; set_tie_order() sets the order in which a
//   class's members are listed (a scheduler's node rank). Neither changes
//   what is bound where.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mig/mig_slots.h"
#include "model/gpu_catalog.h"
#include "model/ids.h"
#include "model/node.h"
#include "model/node_classes.h"
#include "model/request.h"
#include "model/status.h"

namespace gpupack {

// Pods on a node by GPU shape: tag 0 = shared (fractional) pods, tag k = pods
// of k whole GPUs (k capped at kMaxShapeTag). CPU-only pods are not counted.
constexpr int kMaxShapeTag = 16;
using ShapeCounts = std::array<uint16_t, kMaxShapeTag + 1>;
int shape_tag(const Request& r);  // -1 for CPU-only requests

// The MIG profile (index into `geo`) a request asks for on that model: by
// name when `mig_profile` is set, else the smallest profile with at least
// gpu_memory_mib and mig_min_sm (when both are 0: the SMs of gpu_milli of the
// full 7g instance). nullopt when none fits or the name is unknown.
std::optional<int> mig_profile_for(const MigGeometry& geo, const Request& req);
// Does a GPU in mode `m` accept a request allowed `modes`? A shared (openb)
// GPU accepts every request allowed some non-MIG mode.
inline bool mode_accepts(GpuMode m, ModeMask modes) {
  if (modes & mode_bit(m)) return true;
  return m == GpuMode::kShared && (modes & ~mode_bit(GpuMode::kMig)) != 0;
}

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
  // Nothing of the node is allocated: every GPU's milli, its CPU and its
  // memory are wholly free (true for a node without GPUs that holds nothing).
  bool fully_free(NodeId n) const {
    return gpu_free_total_[index(n)] == int64_t{gpu_count_[index(n)]} * kGpuMilliPerGpu &&
           cpu_free_[index(n)] == cpu_total_[index(n)] && mem_free_[index(n)] == mem_total_[index(n)];
  }
  const ShapeCounts& shape_counts(NodeId n) const { return shapes_[index(n)]; }
  uint64_t version(NodeId n) const { return version_[index(n)]; }
  const NodeSpec& spec(NodeId n) const { return specs_[index(n)]; }

  // --- hardware (per GPU g of node n; O(1)) ---
  bool has_hardware_setup(NodeId n) const { return hw_node_[index(n)] != 0; }
  GpuMode gpu_mode(NodeId n, int g) const { return gpu_mode_[gi(n, g)]; }
  int64_t gpu_memory_total_mib(NodeId n, int g) const { return gpu_mem_total_[gi(n, g)]; }  // 0 = unknown
  int64_t gpu_memory_free_mib(NodeId n, int g) const { return gpu_mem_free_[gi(n, g)]; }
  int32_t gpu_bandwidth_free_milli(NodeId n, int g) const { return gpu_bw_free_[gi(n, g)]; }
  int32_t gpu_l2_free_milli(NodeId n, int g) const { return gpu_l2_free_[gi(n, g)]; }
  int mps_clients(NodeId n, int g) const { return gpu_clients_[gi(n, g)]; }
  int mps_replicas(NodeId n, int g) const { return gpu_replicas_[gi(n, g)]; }
  double oversubscription(NodeId n, int g) const { return gpu_oversub_[gi(n, g)]; }
  // nullptr unless the GPU is in MIG mode. Dynamic GPUs hold the instances
  // in use; fixed-layout GPUs hold the configured layout (busy ones in
  // mig_busy_starts).
  const MigGpuState* mig_state(NodeId n, int g) const {
    const int32_t m = gpu_mig_[gi(n, g)];
    return m < 0 ? nullptr : &mig_[static_cast<size_t>(m)];
  }
  bool mig_fixed_layout(NodeId n, int g) const { return gpu_mig_[gi(n, g)] >= 0 && mig_fixed_[gpu_mig_[gi(n, g)]]; }
  uint8_t mig_busy_starts(NodeId n, int g) const {
    return gpu_mig_[gi(n, g)] < 0 ? 0 : mig_busy_[static_cast<size_t>(gpu_mig_[gi(n, g)])];
  }
  int gpu_numa(NodeId n, int g) const { return gpu_numa_[gi(n, g)]; }
  int gpu_pcie_switch(NodeId n, int g) const { return gpu_pcie_[gi(n, g)]; }
  int gpu_nvlink_domain(NodeId n, int g) const { return gpu_nvlink_[gi(n, g)]; }
  int numa_count(NodeId n) const { return numa_count_[index(n)]; }
  int64_t numa_cpu_free_milli(NodeId n, int u) const { return numa_cpu_free_[numa_begin_[index(n)] + u]; }
  int64_t numa_memory_free_mib(NodeId n, int u) const { return numa_mem_free_[numa_begin_[index(n)] + u]; }
  int64_t numa_cpu_total_milli(NodeId n, int u) const { return numa_cpu_total_[numa_begin_[index(n)] + u]; }
  int64_t numa_memory_total_mib(NodeId n, int u) const { return numa_mem_total_[numa_begin_[index(n)] + u]; }

  // Advertised MIG devices (NodeSpec::mig_devices) of `profile` on node n,
  // in total and free now; 0 when the node offers none. O(profiles).
  int64_t mig_devices_total(NodeId n, std::string_view profile) const;
  int64_t mig_devices_free(NodeId n, std::string_view profile) const;
  // kMigSlot when the node lacks the request's MIG devices (unresolvable when
  // it does not offer that many at all), else ok.
  Status check_mig_devices(NodeId n, const Request& req) const;

  // Would `req` fit on GPU g of node n alone (mode, milli, memory, bandwidth,
  // L2, MPS limits, and for MIG the instance `mig_profile` at `mig_start`)?
  // kNone when it does. `message` (optional) gets the reason. O(1).
  Dimension gpu_fit(NodeId n, int g, const Request& req, int mig_profile = -1, int mig_start = -1,
                    std::string* message = nullptr) const;
  // Milli that GPU g is charged for `req` placed as `where` (by its mode).
  int32_t gpu_charge_milli(NodeId n, int g, const Request& req, const Assignment& where) const {
    return charge(gi(n, g), req, where);
  }

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

  // --- nodes grouped by identical state ---
  const NodeClasses& node_classes() const { return classes_; }
  // One rank per node (lower first), or empty for the node index.
  void set_tie_order(std::vector<int64_t> rank);
  // A process-wide stamp of the last set_tie_order() (or construction), so
  // that a caller can tell whether it checked this order already.
  uint64_t tie_order_stamp() const { return tie_order_stamp_; }
  // Do nodes a and b have the same state (see NodeClasses)? O(GPUs).
  bool same_node_state(NodeId a, NodeId b) const;

  // Recomputes every derived quantity from the bound pods and compares; an
  // empty result means all invariants hold (node classes included).
  // O(nodes + GPUs + pods).
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
  void apply_hardware(const Request& req, const Assignment& where, int sign);
  Status check_hardware(const Request& req, const Assignment& where) const;
  int32_t charge(size_t gpu, const Request& req, const Assignment& where) const;
  size_t gi(NodeId n, int g) const { return static_cast<size_t>(gpu_begin_[index(n)] + g); }
  void init_hardware();

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

  // Hardware state (per GPU unless noted).
  std::vector<uint8_t> hw_node_;  // per node: has a hardware setup
  std::vector<GpuMode> gpu_mode_;
  std::vector<int64_t> gpu_mem_total_, gpu_mem_free_;
  std::vector<int32_t> gpu_bw_free_, gpu_l2_free_;
  std::vector<int16_t> gpu_clients_, gpu_replicas_;
  std::vector<double> gpu_oversub_;
  std::vector<int32_t> gpu_mig_;  // index into mig_, -1 = not MIG
  std::vector<int8_t> gpu_numa_, gpu_pcie_, gpu_nvlink_;
  std::vector<MigGpuState> mig_;
  std::vector<uint8_t> mig_busy_, mig_fixed_;
  std::vector<int32_t> numa_begin_, numa_count_;  // per node
  std::vector<int64_t> numa_cpu_total_, numa_cpu_free_, numa_mem_total_, numa_mem_free_;
  std::vector<std::vector<MigDeviceCount>> mig_dev_free_;  // per node, NodeSpec::mig_devices order

  std::vector<PodRecord> pods_;
  int bound_pods_ = 0;
  std::vector<LogEntry> log_;

  uint64_t node_state_hash(size_t n) const;
  NodeSummary node_summary(size_t n) const;
  void check_classes(std::vector<std::string>& errors) const;
  void reclassify(size_t n);
  NodeClasses classes_;
  uint64_t tie_order_stamp_ = 0;
};

}  // namespace gpupack
