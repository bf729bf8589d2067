// Packing prices (frag/packing_prices.h): the dual of the fluid GPU packing
// LP, checked on instances whose optimum follows by hand and, on random
// instances, against the same LP over every pattern solved directly.
#include "frag/packing_prices.h"

#include <glpk.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace gpupack {
namespace {

using Items = std::vector<std::pair<int32_t, double>>;

TEST(PackingPrices, PricesAreTheShareOfAGpuAnItemTakesInAnOptimalPacking) {
  // 470s fill GPUs in pairs; an 810 fills one alone (a 160 would fit beside
  // it, but there are 54 of them for 1,000 810s: free for the taking).
  const PackingPrices p(Items{{470, 700}, {810, 1000}, {160, 54}});
  EXPECT_NEAR(p.price(470), 0.5, 1e-9);
  EXPECT_NEAR(p.price(810), 1.0, 1e-9);
  EXPECT_NEAR(p.price(160), 0.0, 1e-9);
  EXPECT_NEAR(p.price(320), 0.0, 1e-9);  // not in the workload
  EXPECT_NEAR(p.fluid_gpus(), 350 + 1000, 1e-6);
  EXPECT_NEAR(p.gap_value(1000), 1.0, 1e-9);
  EXPECT_NEAR(p.gap_value(530), 0.5, 1e-9);
  EXPECT_NEAR(p.gap_value(469), 0.0, 1e-9);
  // A 470 on a fresh GPU, or beside another 470, loses nothing; beside
  // nothing else can it go. An 810 on a fresh GPU loses nothing.
  EXPECT_NEAR(p.loss(1000, 530), 0.0, 1e-9);
  EXPECT_NEAR(p.loss(530, 60), 0.0, 1e-9);
  EXPECT_NEAR(p.loss(1000, 190), 0.0, 1e-9);
  EXPECT_EQ(p.loss(700, 700), 0.0);
}

TEST(PackingPrices, APodThatBreaksAPairingLosesWhatItStrands) {
  // 650s need the 320s as partners; 470s pair with each other. A 320 next
  // to a 470 leaves 210 that nothing fills, and takes a 530 gap a 470 would
  // have filled: it loses 1/2 - 1/3 of a GPU. Beside a 650 it loses nothing.
  const PackingPrices p(Items{{650, 300}, {320, 300}, {470, 800}});
  EXPECT_NEAR(p.fluid_gpus(), 300 + 400, 1e-6);
  EXPECT_NEAR(p.price(470), 0.5, 1e-9);
  EXPECT_NEAR(p.price(650) + p.price(320), 1.0, 1e-9);
  EXPECT_NEAR(p.loss(350, 30), 0.0, 1e-9);                  // 320 beside a 650
  EXPECT_NEAR(p.loss(530, 210), 0.5 - p.price(320), 1e-9);  // 320 beside a 470
  EXPECT_GT(p.loss(530, 210), 0.1);
  EXPECT_NEAR(p.loss(1000, 350), 0.0, 1e-9);  // 650 on a fresh GPU
}

TEST(PackingPrices, AWorkloadWithoutGpuItemsPricesNothing) {
  const PackingPrices none;
  const PackingPrices cpu_only(TargetWorkload::from_requests(std::vector<Request>{{4000, 0, 0, 0, 0}}));
  for (const PackingPrices* p : {&none, &cpu_only}) {
    EXPECT_TRUE(p->prices().empty());
    EXPECT_EQ(p->gap_value(1000), 0.0);
    EXPECT_EQ(p->loss(1000, 0), 0.0);
  }
}

TEST(PackingPrices, ATargetCountsEachGpuOfAMultiGpuClassAsAnItem) {
  const PackingPrices p(TargetWorkload::from_requests(
      std::vector<Request>{{8000, 0, 8, 1000, 0}, {1000, 0, 1, 500, 0}, {1000, 0, 1, 500, 0}}, {}, 1.0));
  ASSERT_EQ(p.prices().size(), 2u);
  EXPECT_NEAR(p.fluid_gpus(), 8 + 1, 1e-6);  // eight whole GPUs and one pair of 500s
}

// The LP over every pattern (multisets of sizes fitting 1000), solved at once.
double enumerated_lp(const Items& items) {
  std::vector<std::vector<int>> patterns;
  std::vector<int> cur(items.size(), 0);
  std::function<void(size_t, int)> walk = [&](size_t i, int left) {
    if (i == items.size()) {
      patterns.push_back(cur);
      return;
    }
    for (int k = 0; k * items[i].first <= left; ++k) {
      cur[i] = k;
      walk(i + 1, left - k * items[i].first);
    }
    cur[i] = 0;
  };
  walk(0, 1000);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, static_cast<int>(items.size()));
  for (size_t s = 0; s < items.size(); ++s) glp_set_row_bnds(lp, static_cast<int>(s + 1), GLP_LO, items[s].second, 0);
  for (const auto& pat : patterns) {
    std::vector<int> idx{0};
    std::vector<double> val{0};
    for (size_t s = 0; s < items.size(); ++s)
      if (pat[s] > 0) {
        idx.push_back(static_cast<int>(s + 1));
        val.push_back(pat[s]);
      }
    if (idx.size() == 1) continue;
    const int col = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, col, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, col, 1.0);
    glp_set_mat_col(lp, col, static_cast<int>(idx.size()) - 1, idx.data(), val.data());
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  EXPECT_EQ(glp_simplex(lp, &parm), 0);
  const double v = glp_get_obj_val(lp);
  glp_delete_prob(lp);
  return v;
}

TEST(PackingPrices, MatchTheLpOverEveryPatternOnRandomWorkloads) {
  std::mt19937 rng(7);
  for (int round = 0; round < 25; ++round) {
    Items items;
    const int sizes = 2 + static_cast<int>(rng() % 6);
    for (int i = 0; i < sizes; ++i) {
      const int32_t size = 100 + static_cast<int32_t>(rng() % 901);
      bool dup = false;
      for (const auto& it : items) dup |= it.first == size;
      if (!dup) items.emplace_back(size, 1.0 + static_cast<double>(rng() % 500));
    }
    const PackingPrices p(items);
    // Strong duality: the prices' value is the LP's optimum ...
    EXPECT_NEAR(p.fluid_gpus(), enumerated_lp(items), 1e-6) << "round " << round;
    // ... they are feasible (no pattern worth more than one GPU) ...
    EXPECT_LE(p.gap_value(1000), 1.0 + 1e-9);
    // ... and every placement's loss is >= 0, K is non-decreasing and holds each item.
    for (int x = 1; x <= 1000; ++x) {
      EXPECT_GE(p.gap_value(x), p.gap_value(x - 1) - 1e-12);
      for (const auto& [size, n] : items)
        if (size <= x) {
          EXPECT_GE(p.gap_value(x), p.price(size) - 1e-12);
          EXPECT_GE(p.loss(x, x - size), 0.0);
        }
    }
  }
}

Request gpu_request(int32_t gpu_count, int32_t gpu_milli) {
  Request r;
  r.cpu_milli = 1000;
  r.gpu_count = gpu_count;
  r.gpu_milli = gpu_milli;
  return r;
}

TEST(MixPackingBound, IsWhatTheSizesLeaveWhenTheMixIsPackedAsTightlyAsItCanBe) {
  // Whole GPUs, and sizes that pair up exactly, waste nothing.
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(1, 1000), gpu_request(8, 1000)}), 1.0, 1e-9);
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(1, 600), gpu_request(1, 400)}), 1.0, 1e-9);
  // Two 470s leave 60 of each GPU; an 810 leaves 190.
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(1, 470)}), 0.94, 1e-9);
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(1, 810)}), 0.81, 1e-9);
  // Two 700s for one 300: one GPU holds 700 + 300, the other 700 alone.
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(1, 700), gpu_request(1, 700), gpu_request(1, 300)}),
              1700.0 / 2000.0, 1e-9);
  // A 4-GPU pod is four whole items; its GPUs are full, the 810's is not:
  // (4000 + 810) / (5 GPUs).
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(4, 1000), gpu_request(1, 810)}), 4810.0 / 5000.0,
              1e-9);
  // Milli above one GPU count as one GPU each.
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(2, 1500), gpu_request(1, 810)}), 2810.0 / 3000.0,
              1e-9);
}

TEST(MixPackingBound, ScalesWithNothingButTheProportions) {
  std::vector<Request> mix = {gpu_request(1, 650), gpu_request(1, 320), gpu_request(1, 470), gpu_request(1, 470)};
  const double once = *mix_packing_bound(mix);
  const std::vector<Request> copy = mix;
  for (int i = 0; i < 9; ++i) mix.insert(mix.end(), copy.begin(), copy.end());
  EXPECT_NEAR(*mix_packing_bound(mix), once, 1e-9);
  // 650 + 320 leaves 30, two 470s leave 60: 1910 milli on 2 GPUs.
  EXPECT_NEAR(once, 1910.0 / 2000.0, 1e-9);
}

TEST(PackingWaste, IsTheFreeMilliThePackedSizesCannotAvoid) {
  // Three 470s need 1.5 GPUs in the fluid packing: 1500 - 1410.
  EXPECT_NEAR(packing_waste_milli(std::vector<Request>(3, gpu_request(1, 470))), 90.0, 1e-6);
  EXPECT_NEAR(packing_waste_milli(std::vector<Request>{gpu_request(1, 810), gpu_request(1, 810)}), 380.0, 1e-6);
  EXPECT_NEAR(packing_waste_milli(std::vector<Request>{gpu_request(1, 600), gpu_request(1, 400)}), 0.0, 1e-6);
  EXPECT_NEAR(packing_waste_milli(std::vector<Request>{gpu_request(8, 1000)}), 0.0, 1e-6);
  EXPECT_EQ(packing_waste_milli(std::vector<Request>{}), 0.0);
}

TEST(PackingWaste, ManySizesArePackedRoundedDownAndStayALowerBound) {
  // 999 distinct sizes: the LP runs on the sizes rounded down to multiples
  // of 10 (its GPUs then never exceed the exact packing's), against the
  // exact requested milli.
  std::vector<Request> many, rounded;
  double exact_milli = 0, rounded_milli = 0;
  for (int32_t m = 1; m <= 999; ++m) {
    many.push_back(gpu_request(1, m));
    const int32_t r = m < 10 ? m : m - m % 10;
    rounded.push_back(gpu_request(1, r));
    exact_milli += m;
    rounded_milli += r;
  }
  const double rounded_gpus_milli = packing_waste_milli(rounded) + rounded_milli;  // 1000 x its fluid GPUs
  EXPECT_NEAR(packing_waste_milli(many), std::max(0.0, rounded_gpus_milli - exact_milli), 1e-6);
  const double bound = *mix_packing_bound(many);
  EXPECT_GT(bound, 0.5);
  EXPECT_LE(bound, 1.0);
  // Up to 100 sizes the LP is exact: 100 sizes of 10..1000 step 10.
  std::vector<Request> hundred;
  for (int32_t m = 10; m <= 1000; m += 10) hundred.push_back(gpu_request(1, m));
  Items items;
  for (int32_t m = 10; m <= 1000; m += 10) items.emplace_back(m, 1.0);
  EXPECT_NEAR(packing_waste_milli(hundred), 1000 * PackingPrices(items).fluid_gpus() - 50500, 1e-6);
}

TEST(PackingPrices, ManySizesArePricedByTheirRoundedSizeAndStayFeasible) {
  Items items, rounded;
  for (int32_t m = 1; m <= 999; m += 2) items.emplace_back(m, 1.0 + m % 7);
  for (const auto& [m, n] : items) rounded.emplace_back(m < 10 ? m : m - m % 10, n);
  const PackingPrices p(items), r(rounded);
  EXPECT_EQ(p.prices(), r.prices());  // the LP of the rounded sizes
  EXPECT_NEAR(p.fluid_gpus(), r.fluid_gpus(), 1e-9);
  EXPECT_LE(p.gap_value(1000), 1.0 + 1e-9);
  for (const auto& [m, n] : items) {
    EXPECT_EQ(p.price(m), r.price(m < 10 ? m : m - m % 10)) << m;
    for (int32_t before = m; before <= 1000; before += 37) EXPECT_GE(p.loss(before, before - m), 0.0) << m;
  }
}

TEST(GpuUseIsMilli, OnlyWithoutHardwareFieldsOnGpuRequests) {
  std::vector<Request> plain = {gpu_request(1, 470), gpu_request(0, 0)};
  EXPECT_TRUE(gpu_use_is_milli(plain));
  plain[1].numa_aligned = true;  // a CPU-only pod's fields say nothing of GPUs
  EXPECT_TRUE(gpu_use_is_milli(plain));
  std::vector<Request> mig = plain;
  mig[0].mig_profile = "1g.10gb";
  EXPECT_FALSE(gpu_use_is_milli(mig));
  std::vector<Request> memory = plain;
  memory[0].gpu_memory_mib = 8000;
  EXPECT_FALSE(gpu_use_is_milli(memory));
  std::vector<Request> devices = plain;
  devices[1].mig_devices.push_back({});
  EXPECT_FALSE(gpu_use_is_milli(devices));
}

TEST(MixPackingBound, IsUnknownWithoutGpuRequests) {
  EXPECT_FALSE(mix_packing_bound(std::vector<Request>{}).has_value());
  EXPECT_FALSE(mix_packing_bound(std::vector<Request>{gpu_request(0, 0), gpu_request(1, 0)}).has_value());
  // CPU-only pods change nothing.
  EXPECT_NEAR(*mix_packing_bound(std::vector<Request>{gpu_request(0, 0), gpu_request(1, 470)}), 0.94, 1e-9);
}

}  // namespace
}  // namespace gpupack
