#include "sim/curves.h"

#include <cmath>
#include <limits>

namespace gpupack {

Curve bucket_curve(const StaticRunResult& run) {
  constexpr int kBuckets = kMaxArrivedPct + 1;
  std::vector<double> alloc_sum(kBuckets, 0), frag_sum(kBuckets, 0);
  std::vector<int> count(kBuckets, 0);
  const double cap = static_cast<double>(run.capacity_milli);
  for (const StaticStep& s : run.steps) {
    const long k = std::lround(100.0 * static_cast<double>(s.arrived_milli) / cap);
    if (k < 0 || k >= kBuckets) continue;
    alloc_sum[k] += 100.0 * static_cast<double>(s.used_milli) / cap;
    frag_sum[k] += 100.0 * s.frag_milli / cap;
    ++count[k];
  }
  Curve c;
  c.alloc_pct.assign(kBuckets, std::numeric_limits<double>::quiet_NaN());
  c.frag_pct.assign(kBuckets, std::numeric_limits<double>::quiet_NaN());
  for (int k = 0; k < kBuckets; ++k) {
    double a = 0, f = 0;
    int n = 0;
    for (int j = (count[k] > 0 ? k : k - 1); j <= (count[k] > 0 ? k : k + 1); ++j) {
      if (j < 0 || j >= kBuckets) continue;
      a += alloc_sum[j];
      f += frag_sum[j];
      n += count[j];
    }
    if (n > 0) {
      c.alloc_pct[k] = a / n;
      c.frag_pct[k] = f / n;
    }
  }
  return c;
}

Curve mean_curve(std::span<const Curve> curves) {
  Curve out;
  constexpr int kBuckets = kMaxArrivedPct + 1;
  out.alloc_pct.assign(kBuckets, std::numeric_limits<double>::quiet_NaN());
  out.frag_pct.assign(kBuckets, std::numeric_limits<double>::quiet_NaN());
  for (int k = 0; k < kBuckets; ++k) {
    double a = 0, f = 0;
    int n = 0;
    for (const Curve& c : curves) {
      if (std::isnan(c.alloc_pct[k])) continue;
      a += c.alloc_pct[k];
      f += c.frag_pct[k];
      ++n;
    }
    if (n > 0) {
      out.alloc_pct[k] = a / n;
      out.frag_pct[k] = f / n;
    }
  }
  return out;
}

}  // namespace gpupack
