// Curves over arrived workload, as the FGD paper plots them.
//
// Contract: bucket k (0..kMaxArrivedPct) holds the mean of a quantity over
// the steps whose round(100 x arrived / capacity) == k; an empty bucket takes
// the mean over the steps in buckets k-1..k+1, and stays NaN if those are
// empty too. Percentages are of the cluster's GPU capacity.
#pragma once

#include <span>
#include <vector>

#include "sim/static_experiment.h"

namespace gpupack {

constexpr int kMaxArrivedPct = 130;

struct Curve {
  std::vector<double> alloc_pct;  // size kMaxArrivedPct + 1
  std::vector<double> frag_pct;
};

Curve bucket_curve(const StaticRunResult& run);
// Point-wise mean, skipping NaN entries.
Curve mean_curve(std::span<const Curve> curves);

}  // namespace gpupack
