// The scoring interface every placement policy implements.
//
// Contract (kube-scheduler's PreScore/Score extension points):
// - prepare(state, req) is called once per pod before any score() for it.
// - score(state, node, req) is called only for nodes that passed the filter
//   (the request fits there). It returns the node's score (higher is better)
//   and the GPUs the pod would take on that node. It never changes the state.
// - If normalizes_scores() is true the scheduler rescales raw scores over the
//   feasible nodes to 0..100 (min-max, integer division) before choosing.
// - scores_by_state() is true when score() depends only on the node's state
//   (ClusterState::same_node_state) and the request, not on which node it is
//   or how often score() was called, nor on the other nodes; the scheduler
//   then scores one node per class of identical nodes, and keeps a class's
//   score across decisions while the class lives (its class index). A
//   policy drawing random numbers says false.
// - parallel_score() (default false) lets the scheduler score distinct
//   nodes of one decision on several threads.
// - scoring_epoch() (default 0) changes, in prepare(), when the policy's
//   score for the same node state and request changes (a learned target
//   rebuilt); the scheduler then drops the class scores it keeps.
// Ties between nodes are broken by the scheduler (lowest node rank), never by
// a policy. A policy object serves one ClusterState at a time and is not
// thread-safe; policies may cache per-node results keyed by
// ClusterState::version().
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model/cluster_state.h"
#include "model/request.h"

namespace gpupack {

struct NodeScore {
  int64_t score = 0;
  uint32_t gpu_mask = 0;  // GPUs of the node the pod would take
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual void prepare(const ClusterState& state, const Request& req) {}
  virtual NodeScore score(const ClusterState& state, NodeId node, const Request& req) = 0;
  virtual bool normalizes_scores() const { return false; }
  virtual bool scores_by_state() const { return true; }
  // True when, after prepare(), score() may be called from several threads
  // at once for distinct nodes (per-node caches only; Scheduler's parallel
  // scoring). prepare() itself is never concurrent.
  virtual bool parallel_score() const { return false; }
  virtual uint64_t scoring_epoch() const { return 0; }
  // When the last prepare() moved scoring_epoch() from `since` to its value
  // now, one step, and only the scores of some nodes changed (each other
  // node's score for every request stays what it was), appends those nodes
  // to `out` and returns true: a caller keeping scores may drop just theirs.
  // false (the default): any score may have changed.
  virtual bool rescored_nodes(uint64_t /*since*/, std::vector<NodeId>* /*out*/) const { return false; }
};

}  // namespace gpupack
