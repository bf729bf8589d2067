// Packing prices: what free GPU milli is worth to a target workload when its
// pods are packed onto GPUs as tightly as the workload's sizes allow.
//
// Contract. The items are the per-GPU requests of the target's GPU classes
// (frag/fgd.h): a class of count c, g GPUs and m milli per GPU gives c x g
// items of size min(m, 1000); CPU-only classes give none (CPU, memory and
// GPU models are not part of this measure). The fluid packing LP over
// patterns p (multisets of sizes whose sum fits one GPU, a_sp items of s)
//   min sum_p x_p   s.t.  sum_p a_sp x_p >= n_s for every size s,  x >= 0
// has the dual
//   max sum_s n_s pi_s   s.t.  sum_s a_sp pi_s <= 1 for every pattern,  pi >= 0:
// pi_s is the share of a GPU an item of size s is worth when the workload is
// packed as well as it can be (pi = 1/2 for a size that fills GPUs in pairs
// with itself). From the prices:
// - gap_value(x) = K(x), the most price a gap of x milli can hold (an
//   unbounded knapsack over the sizes; K(1000) <= 1 by the dual's rows);
// - loss(before, after) = K(before) - K(after) - pi(before - after) >= 0,
//   the value a placement on one GPU destroys. It is 0 exactly when the pod
//   is part of a most valuable filling of the gap (on a fresh GPU: of a
//   pattern an optimal fluid packing may use). With the
//   openb default prices a 320 put next to a 470 (leaving 210) loses
//   1/2 - 1/3 = 1/6 of a GPU: 470s would have filled that 530-milli gap.
//   Sizes that are not in the target are worth 0.
// Solved by cutting planes on the dual (column generation on the primal):
// start from one row per size (as many of it as fit a GPU), solve with GLPK's
// dual simplex (the basis stays dual feasible as rows are added), add every
// pattern worth more than 1 + 1e-9 that the knapsack gives (per size s: s
// plus a most valuable filling of 1000 - s) while K(1000) is, and finally
// divide the prices by max(1, K(1000)) so that they are feasible whatever
// the round count. Deterministic. Cost per round: one knapsack O(1000 x
// sizes) and a warm-started simplex; the openb default target takes about
// 0.07 ms. Queries are O(1) table reads. With more than 100 distinct sizes
// (999 exact sizes take 14 s) the LP runs on the sizes rounded down to
// multiples of 10 milli (at most 109 sizes; 999 sizes then take 8 ms and 100
// exact ones 6 ms, engine_bench BM_PackingPricesManySizes) and each size is
// priced as its rounded size: the prices stay feasible for the exact sizes
// (an exact pattern rounded down is a pattern), K is over the rounded sizes,
// every loss stays >= 0, and fluid_gpus() is at most the exact LP's. openb's
// sizes are multiples of 10.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "frag/fgd.h"

namespace gpupack {

class PackingPrices {
 public:
  PackingPrices();  // no items: every price, value and loss is 0
  explicit PackingPrices(const TargetWorkload& target);
  // From (size, items) pairs directly (sizes 1..1000; items > 0).
  explicit PackingPrices(const std::vector<std::pair<int32_t, double>>& items);

  // pi of an item of `milli` per GPU (1..1000); 0 for sizes not in the target.
  double price(int32_t milli) const;
  // K(x) for x in 0..1000.
  double gap_value(int32_t free_milli) const { return gap_value_[static_cast<size_t>(free_milli)]; }
  // The value lost by taking (before - after) milli from a GPU with `before`
  // free; 0 when nothing is taken.
  double loss(int32_t free_before_milli, int32_t free_after_milli) const;

  // (size, pi) of every item size, ascending; the LP's optimum (GPUs the
  // fluid packing needs for the target's items, in the target's counts);
  // the rows the cutting planes added.
  const std::vector<std::pair<int32_t, double>>& prices() const { return prices_; }
  double fluid_gpus() const { return fluid_gpus_; }
  int rows_added() const { return rows_added_; }

 private:
  std::vector<std::pair<int32_t, double>> prices_;
  std::vector<double> price_of_;   // by milli, 0..1000
  std::vector<double> gap_value_;  // K, 0..1000
  double fluid_gpus_ = 0;
  int rows_added_ = 0;
};

// The GPU milli the GPU items of `requests` (gpu_count items of
// min(gpu_milli, 1000) per request) leave unused however they are packed:
// 1000 x the fluid LP's GPUs - their milli. A cluster holding these pods has
// at least this much GPU milli free; the rest of its free milli is what the
// placement left. Only gpu_count and gpu_milli are read (hardware fields are
// not); 0 when no request asks for GPU milli. The LP's dual is feasible
// whenever it stops, so this never exceeds the exact waste; nor does it with
// more than 100 distinct sizes, when the LP packs them rounded down to
// multiples of 10 milli (as PackingPrices does; exact on openb, whose sizes
// are all multiples of 10).
double packing_waste_milli(std::span<const Request> requests);

// The packing bound of a workload mix: the highest GPU allocation (a share of
// GPU capacity, 0..1) any cluster can hold while the pods it holds come in
// the proportions of `requests`: lambda copies of the mix leave lambda x
// packing_waste_milli free, so the allocation is at most
// requested / (requested + waste). It counts GPU milli alone: CPU, memory,
// GPU models, nodes and the order of arrivals only lower what a placement
// reaches. A scheduler that places every pod that fits admits the arrivals
// in their proportions until the cluster fills; only which pods fail after
// that (and the pods admitted into the gaps) shifts the mix it holds and can
// move it past this bound. nullopt when no request asks for GPU milli.
std::optional<double> mix_packing_bound(std::span<const Request> requests);

// True when every request's GPU use is its gpu_count x gpu_milli alone: none
// asks for GPUs or MIG devices with hardware fields set (a MIG slice, a
// sharing mode, GPU memory...). Only then do the two measures above speak
// of the allocation a simulation reports.
bool gpu_use_is_milli(std::span<const Request> requests);

// The fluid packing LP's GPUs for items given as (size 1..1000 milli, count
// > 0) pairs: at least this many GPUs hold them, however they are packed
// (a lower bound on the GPUs any packing uses; with more than 100 distinct
// sizes, the LP of the sizes rounded down, as above). 0 when there are none.
double fluid_packing_gpus(const std::vector<std::pair<int32_t, double>>& items);

}  // namespace gpupack
