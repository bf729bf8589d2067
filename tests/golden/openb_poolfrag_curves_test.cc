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
#include "sim/curves.h"
#include "sim/experiment.h"

namespace gpupack::testing {
namespace {

TEST(OpenbPoolFragCurves, Gpuspec33IsNeverBelowFgdFrom100To130) {
  GPUPACK_REQUIRE_SHARED(kOpenbDir + "/openb_pod_list_gpuspec33.csv");
  const OpenbTrace trace = load_openb("openb_pod_list_gpuspec33");
  ExperimentSpec spec;
  spec.nodes = trace.nodes;
  spec.trace = trace.pods;
  spec.policies = {"fgd", "poolfrag"};
  for (uint64_t s = 42; s < 52; ++s) spec.seeds.push_back(s);
  spec.tune = 1.3;
  const auto runs = run_experiment(spec);
  std::vector<Curve> means;
  size_t job = 0;
  for (size_t p = 0; p < spec.policies.size(); ++p) {
    std::vector<Curve> curves;
    for (size_t s = 0; s < spec.seeds.size(); ++s) curves.push_back(bucket_curve(runs[job++]));
    means.push_back(mean_curve(curves));
  }
  double worst = 1e9;
  for (int k = 100; k <= 130; ++k) worst = std::min(worst, means[1].alloc_pct[k] - means[0].alloc_pct[k]);
  std::printf("poolfrag - fgd: worst over 100..130 %+.2f pp, at 130%% %+.2f pp\n", worst,
              means[1].alloc_pct[130] - means[0].alloc_pct[130]);
  EXPECT_GE(worst, -0.1);
  EXPECT_GE(means[1].alloc_pct[130], means[0].alloc_pct[130] + 0.3);
}

}  // namespace
}  // namespace gpupack::testing
