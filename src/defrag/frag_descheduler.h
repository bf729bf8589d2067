// Fragmentation-driven descheduling baselines, after the deschedule
// policies of the FGD paper's simulator (fragOnePod, fragMultiPod, cosSim):
// victims chosen by a per-node rule, re-placed by the active policy.
//
// Contract:
// - F(n) is the node's FGD fragmentation (frag/fgd.h) against goal.target,
//   or, without one, against the requests of the bound and pending pods.
// - A node's frag victim is the movable pod whose removal lowers F(n) the
//   most (strictly; ties to the lowest pod id); none if no removal lowers it.
// - kFragOnePod: nodes by F(n) at the start, highest first (ties to the
//   lowest index), one victim at most each.
// - kFragMultiPod: the node of highest current F(n) gives its victim, its
//   F(n) is recomputed and it competes again; a node without a victim drops
//   out.
// - kCosSim: nodes with under 2,000 CPU milli free and a GPU with over 500
//   milli free, most free GPU milli first (ties to the lowest index), one
//   victim at most each: the movable pod whose request (CPU, GPU milli as
//   shares of the node's capacity) has the lowest cosine similarity, in
//   [0, 1), to what the node would have free without it.
// - Each victim is re-placed by `policy` on any other node before the next
//   victim is chosen, so every step runs in order (the simulator evicts all
//   victims, then re-places them); a victim that fits on no other node stays
//   and is not chosen again. Each pod moves at most once.
// - Then every pending pod of `goal` is offered to `policy` over all nodes,
//   as in plan_descheduler(). Moves never exceed `budget`; immovable pods
//   never move; the plan is valid in order. `state` is not changed.
//   O(victims x pods per node) F(n) evaluations plus O(moves x nodes) scores.
#pragma once

#include <cstdint>
#include <span>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "defrag/plan.h"
#include "policy/policy.h"

namespace gpupack {

enum class FragDeschedulerRule { kFragOnePod, kFragMultiPod, kCosSim };

DefragPlan plan_frag_descheduler(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                                 const PodMoveInfos& infos, Policy& policy, std::span<const int64_t> node_rank,
                                 FragDeschedulerRule rule);

}  // namespace gpupack
