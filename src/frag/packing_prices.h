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
// simplex, add the pattern of the knapsack K(1000) while it is worth more
// than 1 + 1e-9, and finally divide the prices by max(1, K(1000)) so that
// they are feasible whatever the iteration count. Deterministic. Cost: one
// LP of (sizes) columns per added row, each knapsack O(1000 x sizes); the
// openb targets (12-15 sizes) take a few ms. Queries are O(1) table reads.
#pragma once

#include <cstdint>
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

}  // namespace gpupack
