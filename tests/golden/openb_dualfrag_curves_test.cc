// dualfrag against FGD on the four openb traces: the mean over seeds 42..51
// (tune 1.3) of GPU allocation must not fall below FGD's by more than 0.1 pp
// at any arrived percentage from 100 to 130 (the bound; measured
// +0.27 pp at worst), and at 130% must beat FGD by at least the floor below
// (measured +0.86 / +1.35 / +0.28 / +1.02 pp; each floor leaves 0.03-0.12 pp
// under the measured gain, far more than floating-point differences in the
// curve means of these deterministic runs, and lies above dualfrag's gain
// without its fully-free-node key, +0.72 / +1.29 / +0.24 / +0.78, so that
// losing the key fails the test, and above poolfrag's +0.32 / +0.16 / +0.19
// / +0.54).
// Before the cluster fills (0 to 100% arrived) it must not fall below FGD by
// more than the last floor: measured -0.01 / 0.00 / 0.00 / -0.04 pp with the
// whole-node reserve and its safety stock, -0.41 / 0.00 / -0.09 / -0.06
// without the safety stock, -1.91 / 0.00 / -0.85 / -0.10 without the reserve.
// Neither mean passes the packing bound of the trace's mix
// (frag/packing_prices.h; 96.32 / 88.20 / 97.99 / 96.32) by more than 0.1 pp
// (a seed's sample and the pods that fail shift the mix held: dualfrag's mean
// on gpushare100 passes it by 0.05 pp, single runs by up to 0.18 pp), and
// dualfrag comes within 1.5 pp of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "frag/packing_prices.h"
#include "golden/openb_fixture.h"

namespace gpupack::testing {
namespace {

void expect_gain(const std::string& trace, double floor_at_130, double floor_before_100) {
  GPUPACK_REQUIRE_SHARED(kOpenbDir + "/" + trace + ".csv");
  const OpenbTrace openb = load_openb(trace);
  const std::vector<Curve> means = ten_seed_mean_curves(openb, {"fgd", "dualfrag"});
  double worst = 1e9;
  for (int k = 100; k <= 130; ++k) worst = std::min(worst, means[1].alloc_pct[k] - means[0].alloc_pct[k]);
  const double gain = means[1].alloc_pct[130] - means[0].alloc_pct[130];
  double worst_before = 1e9;
  for (int k = 0; k < 100; ++k) worst_before = std::min(worst_before, means[1].alloc_pct[k] - means[0].alloc_pct[k]);
  std::printf("%s: dualfrag - fgd: worst over 100..130 %+.2f pp, at 130%% %+.2f pp, worst over 0..99 %+.2f pp\n",
              trace.c_str(), worst, gain, worst_before);
  EXPECT_GE(worst, -0.1);
  EXPECT_GE(gain, floor_at_130);
  EXPECT_GE(worst_before, floor_before_100);
  const std::optional<double> bound = mix_packing_bound(openb.pods.requests);
  ASSERT_TRUE(bound.has_value());
  std::printf("%s: packing bound of the mix %.2f%%\n", trace.c_str(), 100 * *bound);
  for (const Curve& c : means) EXPECT_LE(c.alloc_pct[130], 100 * *bound + 0.1);
  EXPECT_GE(means[1].alloc_pct[130], 100 * *bound - 1.5);
}

TEST(OpenbDualFragCurves, Default) { expect_gain("openb_pod_list_default", 0.8, -0.15); }
TEST(OpenbDualFragCurves, Gpushare100) { expect_gain("openb_pod_list_gpushare100", 1.32, -0.1); }
TEST(OpenbDualFragCurves, Multigpu50) { expect_gain("openb_pod_list_multigpu50", 0.25, -0.1); }
TEST(OpenbDualFragCurves, Gpuspec33) { expect_gain("openb_pod_list_gpuspec33", 0.9, -0.15); }

}  // namespace
}  // namespace gpupack::testing
