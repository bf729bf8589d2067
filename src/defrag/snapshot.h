// Cluster state snapshots for `gpupack defrag`: nodes, bound pods with their
// GPU assignments and move metadata, pending pods and disruption budgets.
//
// Contract (format "gpupack-state/v1", documented in docs/DEFRAG.md):
// - write_snapshot() writes every node, every bound pod (ascending PodId)
//   and the given pending pods; names come from `infos` (pod-<id> when
//   absent). Throws std::runtime_error naming the path when it cannot write.
// - read_snapshot() checks everything before building anything and throws
//   InputError naming the file, the JSON path (e.g. pods[3].gpus) and the bad
//   value on: malformed JSON, unknown format, unknown node or GPU model,
//   duplicate names, a GPU index outside the node, an assignment that does
//   not match the request, or a pod that does not fit where it is bound.
//   Bound pods get PodIds 0..B-1 in file order, pending pods B.., and
//   `infos` is indexed by those ids.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"

namespace gpupack {

struct Snapshot {
  ClusterState state;
  PodMoveInfos infos;
  std::vector<PendingPod> pending;
  std::map<std::string, int> max_unavailable;  // disruption group -> limit
};

void write_snapshot(const std::string& path, const ClusterState& state, const PodMoveInfos& infos,
                    const std::vector<PendingPod>& pending, const std::map<std::string, int>& max_unavailable = {});

Snapshot read_snapshot(const std::string& path);

// The FGD target workload of a snapshot: its bound and pending pods' requests.
std::shared_ptr<const TargetWorkload> snapshot_target(const Snapshot& snap);
Snapshot parse_snapshot(const std::string& json_text, const std::string& source_name);

}  // namespace gpupack
