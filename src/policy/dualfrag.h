// DualFrag: poolfrag, under one key above FGD's score: the least packing
// loss priced by the target workload's fluid GPU packing.
//
// Rule, per feasible node n and GPU choice (in this order; higher is better):
//  1. The least packing loss of the GPUs the pod would take,
//       loss = sum over those GPUs of K(free before) - K(free after) - pi(request),
//     with pi the dual prices of the fluid packing LP of the target's per-GPU
//     sizes and K(x) the most price a gap of x milli can hold
//     (frag/packing_prices.h). A placement of loss 0 is part of a most
//     valuable filling of each gap it uses; a positive loss is the share of
//     a GPU that the placement gives up for good, in the workload's own
//     prices (a 320 next to a 470, leaving 210, when 470s pair with each
//     other and 650s with 320s: 1/6). Compared in thousandths of a GPU.
//  2. FGD's score (policy/fgd.h).
//  3. The whole-node reserve (policy/whole_node_reserve.h): not taking a
//     fully free node held for the pods that need a whole one (the largest
//     GPU count, or a shape only the largest nodes have), while such nodes
//     are no more than the pods of that kind expected as the free capacity
//     fills.
//  4. poolfrag's pool slack (policy/poolfrag.h).
//  5. For a pod that shares a GPU and asks more CPU per GPU milli than the
//     node has per GPU (cpu x GPUs x 1000 > the node's CPU x gpu_milli): a
//     fully free node before a partly used one.
//  6. capfrag's stranded capacity S and best fit (policy/capfrag.h).
//     Keys 2-6: among placements that lose nothing, the GPU and node
//     questions that the per-GPU prices do not see (whole GPUs and nodes for
//     multi-GPU pods, CPU, GPU models) decide as in poolfrag.
//  7. Then the scheduler's node rank.
// Why the loss goes above FGD's score: FGD's F asks, per class, whether one
// pod still fits a GPU, so it cannot tell a 530-milli gap that a 470 will
// fill from one that only a 320 will half fill; the prices know which sizes
// the workload has to pair. Under FGD's score (as a tie-break) the same key
// is worth next to nothing, since FGD's choice has already opened the
// wrong gap (bench/RESULTS.md, "dualfrag").
// Why the reserve: S breaks FGD's many ties towards CPU-rich fresh nodes, so
// without key 3 the G3 nodes (the only hosts of openb's 120-core 8-GPU pods,
// too rare for FGD's target) and then every whole 8-GPU node go early, and
// dualfrag placed 1-2 pp less than FGD from 80 to 95% arrived (-1.91 at
// worst on default); with it -0.01, and +0.09 pp at 130% (bench/RESULTS.md,
// "The whole-node reserve", "The maximal group" and "The reserve's safety
// stock").
// Why key 5: such a pod spends more than its GPUs' share of a node's CPU.
// On a partly used node that CPU is what the node's other GPUs needed, and S,
// which weighs one target class at a time, lets it go there among FGD's
// ties; on a fully free node the other GPUs keep the rest. It lowers the GPU
// milli left on nodes with under 2 cores free at 130% arrived (default 0.20
// to 0.11% of capacity, gpuspec33 0.54 to 0.45) and adds +0.14 (default),
// +0.06 (gpushare100), +0.04 (multigpu50) and +0.24 (gpuspec33) pp at 130%
// (bench/RESULTS.md, "dualfrag: a fully free node for a CPU-heavy shared
// pod"). For
// every shared pod it gains about as much but spreads the pods over more
// nodes and costs 2.2-2.5x an FGD decision; under S it never decides; above
// the pool slack it spends the kept pools (gpuspec33 +0.88 at 130%, not
// +1.02).
// This is the primal-dual rule of online stochastic bin packing (items drawn
// from a known distribution are placed where the reduced cost under the
// fluid LP's duals is least), applied per GPU, with the target workload as
// the distribution, as FGD uses it.
//
// Constants: one chosen, the reserve's safety stock of 2 standard deviations
// (policy/whole_node_reserve.h, with its table of 0 to 3). The prices come
// from the target's class counts, the reserve from its pod counts and the
// free capacity (horizons of 0.5x and 2x the free capacity measured in
// bench/RESULTS.md);
// the loss is compared in steps of 1/1000 of a GPU (steps of 1/100 and
// 1/20 give the same 10-seed curves on the four openb traces, since the
// openb prices are multiples of 1/12; sensitivity table in bench/RESULTS.md).
//
// Cost: the prices are one small LP at construction (a few ms for the openb
// targets); a candidate costs capfrag's evaluation plus one table lookup per
// GPU taken, the reserve a re-read of the node classes changed since the
// last decision, key 5 a look at the node's totals. Key 5 spreads the
// CPU-heavy shared pods over more nodes, so more node states are scored:
// 1.8-1.9x FGD's time a decision on openb (bench/RESULTS.md).
// Scores depend on node state and request, and on whether each reserve
// group is held: when that changes, scoring_epoch() changes and the
// scheduler assesses again the classes of the nodes whose scores changed
// (Policy::rescored_nodes). Requests that are not plain, and clusters with
// a hardware-configured node, are scored by FGD as in capfrag.
#pragma once

#include <memory>

#include "frag/fgd.h"
#include "policy/policy.h"

namespace gpupack {

std::unique_ptr<Policy> make_dualfrag(std::shared_ptr<const TargetWorkload> target);

}  // namespace gpupack
