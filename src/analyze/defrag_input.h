// The defragmentation planner's input from Kubernetes objects: `gpupack
// defrag --kubeconfig` (or kubectl JSON files) and `gpupack analyze`.
//
// Contract:
// - live_defrag_input() builds the state as `analyze` and `serve` do (every
//   running pod charged to its node, whoever scheduled it; PodId i =
//   pods[i]), the pending GPU pods (the admit goal's), and per running pod
//   its move metadata: namespace and name, and whether it must stay where it
//   is. A pod is held in place, with the reason named in `held`, when it
//   has no controller (nothing would recreate it), is a DaemonSet's or a
//   static (mirror) pod, carries the exempt label (default
//   gpupack.io/defrag=never), has a volume on the node's own disk (emptyDir
//   or hostPath), has a system-*-critical priority class, is selected by
//   more than one PodDisruptionBudget (the Eviction API refuses such pods)
//   or by one that allows no disruption now. A pod selected by one budget
//   that allows k disruptions joins the disruption group "pdb:<ns>/<name>"
//   with at most k pods moved (DefragBudget::max_unavailable).
// - `messages` carries what charging the pods reported (conflicts, pods on
//   unknown nodes). Pure; O(pods x budgets + pods x GPUs).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analyze/analyze.h"
#include "defrag/snapshot.h"
#include "io/kubectl.h"

namespace gpupack {

struct LiveDefragOptions {
  std::string exempt_label_key = "gpupack.io/defrag";
  std::string exempt_label_value = "never";
};

struct LiveDefragInput {
  Snapshot snapshot;
  std::map<std::string, std::string> held;  // "ns/name" -> why it stays (running GPU pods)
  std::vector<std::string> messages;
  std::vector<K8sPod> pods;  // what it was built from (PodId i = pods[i]); empty for a saved state
};

LiveDefragInput live_defrag_input(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                                  const std::vector<K8sPdb>& pdbs, const LiveDefragOptions& options = {});

// Why `pod` may not be moved ("" when it may), by the rules above, the
// budgets aside.
std::string held_reason(const K8sPod& pod, const LiveDefragOptions& options);
// The moves (at most `max_moves_pct` % of the running pods, at least one,
// PodDisruptionBudgets honoured, held pods never moved) that admit the pending GPU pods;
// the planner of defrag/planner.h. No plan, with a note, when nothing is
// pending.
DefragReport plan_admission(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods,
                            const std::vector<K8sPdb>& pdbs, double max_moves_pct = 5.0);

// The held pods grouped by reason, a line each (at most five names), for
// people; "" when none.
std::string held_summary(const std::map<std::string, std::string>& held);

}  // namespace gpupack
