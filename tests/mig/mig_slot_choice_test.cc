#include "mig/mig_slot_choice.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

TEST(MigSlotChoice, NaiveFirstFreeBlocksTheLargeProfileAndMigAwareDoesNot) {
  const MigGeometry& geo = *mig_geometry("A100-40GB");
  const int g1 = *geo.find("1g.5gb");
  const int g4 = *geo.find("4g.20gb");
  const MigTargetMix mix = size_weighted_mix(geo);

  MigGpuState naive(geo), aware(geo);
  for (int i = 0; i < 3; ++i) {
    const auto n = first_free_start(naive, g1);
    const auto a = mig_aware_start(aware, g1, mix);
    ASSERT_TRUE(n && a);
    ASSERT_EQ(naive.place(g1, *n), "");
    ASSERT_EQ(aware.place(g1, *a), "");
  }
  // Naive put the three 1g at 0,1,2: the only 4g placement (0) is gone.
  EXPECT_EQ(naive.occupied_mask(), 0x07);
  EXPECT_FALSE(naive.can_place_anywhere(g4));
  EXPECT_NE(naive.why_not_anywhere(g4).find("overlaps"), std::string::npos);
  // MIG-aware kept slices 0-3 free, so the 4g still fits.
  EXPECT_EQ(aware.occupied_mask(), 0x70);  // starts 6, 4, 5
  EXPECT_TRUE(aware.can_place(g4, 0));
  EXPECT_EQ(aware.place(g4, 0), "");
}

TEST(MigSlotChoice, ScoresExplainTheChoice) {
  const MigGeometry& geo = *mig_geometry("A100-40GB");
  const int g1 = *geo.find("1g.5gb");
  MigGpuState gpu(geo);
  const auto scores = score_starts(gpu, g1, size_weighted_mix(geo));
  ASSERT_EQ(scores.size(), 7u);
  // Starts 0-3 block the 4g and the 7g; starts 4-6 block only the 7g.
  const double w4 = 4, w7 = 8;
  for (const auto& s : scores) {
    EXPECT_DOUBLE_EQ(s.blocked_weight, s.start < 4 ? w4 + w7 : w7) << s.start;
  }
  // Among 4..6, 6 keeps all three 2g placements: chosen.
  EXPECT_EQ(mig_aware_start(gpu, g1, size_weighted_mix(geo)), 6);
}

TEST(MigSlotChoice, TargetMixChangesTheChoice) {
  const MigGeometry& geo = *mig_geometry("A100-80GB");
  const int g2 = *geo.find("2g.20gb");
  MigGpuState gpu(geo);
  // Only 3g instances matter: any 2g start blocks one 3g placement, none
  // blocks both; with 3g at 4 still wanted, prefer 0 (lowest on a tie).
  const auto only3g = mix_from_names(geo, {{"3g.40gb", 1.0}});
  EXPECT_EQ(mig_aware_start(gpu, g2, only3g), 0);
  // If 4g matters, the 2g must stay off slices 0-3.
  const auto want4g = mix_from_names(geo, {{"4g.40gb", 1.0}});
  EXPECT_EQ(mig_aware_start(gpu, g2, want4g), 4);
  EXPECT_THROW(mix_from_names(geo, {{"9g.99gb", 1.0}}), std::invalid_argument);
  EXPECT_THROW(mix_from_names(geo, {{"3g.40gb", -1.0}}), std::invalid_argument);
}

TEST(MigSlotChoice, NoStartWhenNothingFits) {
  const MigGeometry& geo = *mig_geometry("A30");
  MigGpuState gpu(geo);
  ASSERT_EQ(gpu.place(*geo.find("4g.24gb"), 0), "");
  EXPECT_FALSE(first_free_start(gpu, *geo.find("1g.6gb")).has_value());
  EXPECT_FALSE(mig_aware_start(gpu, *geo.find("1g.6gb"), size_weighted_mix(geo)).has_value());
}

TEST(MigSlotChoice, PlaceableInstances) {
  const MigGeometry& geo = *mig_geometry("A100-40GB");
  MigGpuState gpu(geo);
  EXPECT_EQ(placeable_instances(gpu, *geo.find("1g.5gb")), 7);
  EXPECT_EQ(placeable_instances(gpu, *geo.find("2g.10gb")), 3);
  EXPECT_EQ(placeable_instances(gpu, *geo.find("1g.5gb+me")), 1);
  ASSERT_EQ(gpu.place(*geo.find("3g.20gb"), 4), "");
  EXPECT_EQ(placeable_instances(gpu, *geo.find("2g.10gb")), 2);
  EXPECT_EQ(placeable_instances(gpu, *geo.find("1g.5gb")), 4);
  ASSERT_EQ(gpu.place(*geo.find("2g.10gb"), 0), "");
  // Two slices free (2,3), but only 2 compute slices left.
  EXPECT_EQ(placeable_instances(gpu, *geo.find("1g.5gb")), 2);
  EXPECT_EQ(placeable_instances(gpu, *geo.find("2g.10gb")), 1);
}

TEST(MigFragmentation, FollowsTheDefinition) {
  const MigGeometry& geo = *mig_geometry("A100-40GB");
  const int g1 = *geo.find("1g.5gb"), g2 = *geo.find("2g.10gb"), g3 = *geo.find("3g.20gb"), g4 = *geo.find("4g.20gb");
  const auto mix = mix_from_names(geo, {{"1g.5gb", 0.5}, {"3g.20gb", 0.5}});

  MigGpuState empty(geo);
  // Empty GPU: 1g is usable on slices 0-6, slice 7 is stranded for it;
  // 3g covers all 8 slices. 0.5 x 125 + 0.5 x 0.
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(empty, mix), 62.5);

  // 1g at 1 and at 5: 3g no longer fits anywhere -> all 6 free slices
  // (750 milli) count; 1g still fits at 0,2,3,4,6, slice 7 stranded (125).
  MigGpuState holey(geo);
  ASSERT_EQ(holey.place(g1, 1), "");
  ASSERT_EQ(holey.place(g1, 5), "");
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(holey, mix), 0.5 * 750 + 0.5 * 125);

  // The same two 1g packed at 6 and 5 keep a 3g at 0: lower fragmentation.
  MigGpuState packed(geo);
  ASSERT_EQ(packed.place(g1, 6), "");
  ASSERT_EQ(packed.place(g1, 5), "");
  // Free: 0-4 and 7. 3g usable on 0-3 -> 4 and 7 stranded (250); 1g usable
  // on 0-4 -> 7 stranded (125).
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(packed, mix), 0.5 * 250 + 0.5 * 125);
  EXPECT_LT(mig_fragmentation_milli(packed, mix), mig_fragmentation_milli(holey, mix));

  // A full GPU has nothing free, nothing to strand.
  MigGpuState full(geo);
  ASSERT_EQ(full.place(g4, 0), "");
  ASSERT_EQ(full.place(g3, 4), "");
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(full, mix), 0.0);

  // Compute exhausted with a free slice: 2g x3 + 1g leaves slice 7 free and
  // unusable for every profile.
  MigGpuState spent(geo);
  for (int s : {0, 2, 4}) ASSERT_EQ(spent.place(g2, s), "");
  ASSERT_EQ(spent.place(g1, 6), "");
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(spent, mix), 125.0);

  // No weight, no measure.
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(holey, MigTargetMix{}), 0.0);
}

TEST(MigFragmentation, A30UsesQuarterSlices) {
  const MigGeometry& geo = *mig_geometry("A30");
  MigGpuState gpu(geo);
  ASSERT_EQ(gpu.place(*geo.find("1g.6gb"), 1), "");
  const auto mix = mix_from_names(geo, {{"2g.12gb", 1.0}});
  // Free 0,2,3: 2g fits at 2 only -> slice 0 stranded = 250 milli.
  EXPECT_DOUBLE_EQ(mig_fragmentation_milli(gpu, mix), 250.0);
}

}  // namespace
}  // namespace gpupack
