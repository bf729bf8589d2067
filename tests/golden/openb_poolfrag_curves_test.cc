// poolfrag against FGD on the openb gpuspec33 trace (the one with GPU-model
// constraints): the mean over seeds 42..51 (tune 1.3) of GPU allocation must
// not fall below FGD's by more than 0.1 pp at any arrived percentage from
// 100 to 130 (measured: +0.18 pp at worst, at 100%; capfrag alone: -1.29),
// and must be at least FGD's + 0.3 pp at 130% (measured +0.54). The first
// bound is the issue's; the second leaves 0.24 pp under the measured gain,
// far more than floating-point differences in the curve means. On traces
// without model constraints poolfrag places as capfrag (tests/policy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "golden/openb_fixture.h"

namespace gpupack::testing {
namespace {

TEST(OpenbPoolFragCurves, Gpuspec33IsNeverBelowFgdFrom100To130) {
  GPUPACK_REQUIRE_SHARED(kOpenbDir + "/openb_pod_list_gpuspec33.csv");
  const std::vector<Curve> means = ten_seed_mean_curves(load_openb("openb_pod_list_gpuspec33"), {"fgd", "poolfrag"});
  double worst = 1e9;
  for (int k = 100; k <= 130; ++k) worst = std::min(worst, means[1].alloc_pct[k] - means[0].alloc_pct[k]);
  std::printf("poolfrag - fgd: worst over 100..130 %+.2f pp, at 130%% %+.2f pp\n", worst,
              means[1].alloc_pct[130] - means[0].alloc_pct[130]);
  EXPECT_GE(worst, -0.1);
  EXPECT_GE(means[1].alloc_pct[130], means[0].alloc_pct[130] + 0.3);
}

}  // namespace
}  // namespace gpupack::testing
