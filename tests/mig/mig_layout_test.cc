#include "mig/mig_layout.h"

#include <gtest/gtest.h>

#include <set>

namespace gpupack {
namespace {

const MigGeometry& geo(const char* model) { return *mig_geometry(model); }

// GPU Operator default configs (0400_configmap.yaml) and mig-parted examples.
TEST(MigLayout, OperatorAndMigPartedConfigsBuild) {
  struct Case {
    const char* model;
    MigProfileCounts counts;
  };
  const std::vector<Case> valid = {
      {"A100-40GB", {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}},  // all-balanced
      {"A100-40GB", {{"1g.10gb", 4}}},                                 // all-1g.10gb
      {"A100-40GB", {{"1g.5gb", 7}}},
      {"A100-40GB", {{"1g.5gb+me", 1}}},
      {"A100-40GB", {{"2g.10gb", 3}}},
      {"A100-40GB", {{"3g.20gb", 2}}},
      {"A100-40GB", {{"4g.20gb", 1}}},
      {"A100-40GB", {{"7g.40gb", 1}}},
      {"A100-80GB", {{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}},
      {"A100-80GB", {{"1g.10gb", 7}}},
      {"A100-80GB", {{"1g.20gb", 4}}},
      {"A100-80GB", {{"2g.20gb", 3}}},
      {"A100-80GB", {{"3g.40gb", 2}}},
      {"H100-80GB", {{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}},
      {"H100-80GB", {{"1g.10gb", 7}}},
      {"H100-80GB", {{"1g.10gb+me", 1}}},
      {"H200", {{"1g.18gb", 2}, {"2g.35gb", 1}, {"3g.71gb", 1}}},
      {"H200", {{"1g.18gb", 7}}},
      {"H200", {{"1g.35gb", 4}}},
      {"A30", {{"1g.6gb", 2}, {"2g.12gb", 1}}},
      {"A30", {{"1g.6gb", 4}}},
      {"A30", {{"2g.12gb", 2}}},
      {"A30", {{"2g.12gb+me", 1}}},
      {"A30", {{"4g.24gb", 1}}},
      // nos known A100-40GB layouts
      {"A100-40GB", {{"4g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 1}}},
      {"A100-40GB", {{"4g.20gb", 1}, {"1g.5gb", 3}}},
      {"A100-40GB", {{"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 1}}},
      {"A100-40GB", {{"3g.20gb", 1}, {"1g.5gb", 3}}},
      {"A100-40GB", {{"3g.20gb", 1}, {"2g.10gb", 2}}},
      {"A100-40GB", {{"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 2}}},
      {"A100-40GB", {{"2g.10gb", 3}, {"1g.5gb", 1}}},
      {"A100-40GB", {{"2g.10gb", 2}, {"1g.5gb", 3}}},
      {"A100-40GB", {{"2g.10gb", 1}, {"1g.5gb", 5}}},
      {"A100-40GB", {{"4g.20gb", 1}, {"3g.20gb", 1}}},  // R510+
  };
  for (const auto& c : valid) {
    const auto r = find_placement(geo(c.model), c.counts);
    ASSERT_TRUE(r.ok()) << c.model << ": " << r.reason;
    EXPECT_EQ(counts_by_name(*r.state), c.counts) << c.model;
    // The placement found rebuilds from scratch, instance by instance.
    EXPECT_TRUE(build_layout(geo(c.model), r.state->instances()).ok());
  }
}

TEST(MigLayout, InvalidCountsAreRefusedWithAReason) {
  struct Case {
    const char* model;
    MigProfileCounts counts;
    const char* reason_part;
  };
  const std::vector<Case> invalid = {
      {"A100-40GB", {{"2g.10gb", 4}}, "exceeds the 3 instance"},
      {"A100-40GB", {{"1g.5gb", 8}}, "exceeds the 7 instance"},
      {"A100-40GB", {{"4g.20gb", 1}, {"3g.20gb", 1}, {"1g.5gb", 1}}, "needs 8 compute slices"},
      {"A100-40GB", {{"3g.20gb", 1}, {"2g.10gb", 3}}, "needs 9 compute slices"},
      {"A100-40GB", {{"3g.20gb", 2}, {"1g.5gb", 1}}, "needs 9 memory slices"},
      {"A100-40GB", {{"7g.40gb", 1}, {"1g.5gb", 1}}, "compute slices"},
      {"A100-40GB", {{"1g.5gb+me", 2}}, "exceeds the 1 instance"},
      {"A100-80GB", {{"1g.10gb+me", 1}, {"1g.10gb", 7}}, "needs 8 compute slices"},
      {"A100-40GB", {{"3g.40gb", 1}}, "unknown MIG profile '3g.40gb'"},
      {"A30", {{"2g.12gb", 2}, {"1g.6gb", 1}}, "needs 5 compute slices"},
      {"A30", {{"1g.6gb+me", 1}, {"2g.12gb+me", 1}}, "+me instances"},
      {"A30", {{"4g.24gb", 1}, {"1g.6gb", 1}}, "compute slices"},
  };
  for (const auto& c : invalid) {
    const auto r = find_placement(geo(c.model), c.counts);
    EXPECT_FALSE(r.ok()) << c.model << ": " << c.reason_part;
    EXPECT_NE(r.reason.find(c.reason_part), std::string::npos)
        << c.model << ": got '" << r.reason << "', want '" << c.reason_part << "'";
  }
}

// On the real tables every count vector that passes the budget, memory and
// instance checks has a placement; a made-up geometry exercises the search's
// own refusal.
TEST(MigLayout, SearchRefusesWhenStartsCannotBeCombined) {
  MigGeometry toy;
  toy.model_name = "toy";
  toy.memory_slices = 4;
  toy.compute_slices = 4;
  MigProfile small;
  small.name = "1g.1gb";
  small.compute_slices = 1;
  small.memory_slices = 1;
  small.max_instances = 3;
  small.start_mask = 0x07;  // starts 0,1,2 only
  MigProfile big = small;
  big.name = "3g.3gb";
  big.compute_slices = 3;
  big.memory_slices = 3;
  big.max_instances = 1;
  big.start_mask = 0x01;
  toy.profiles = {small, big};
  const auto r = find_placement(toy, MigProfileCounts{{"3g.3gb", 1}, {"1g.1gb", 1}});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.reason.find("avoids overlapping"), std::string::npos) << r.reason;
  EXPECT_TRUE(find_placement(toy, MigProfileCounts{{"1g.1gb", 3}}).ok());
}

TEST(MigLayout, PlacementListsAreValidatedInOrder) {
  const auto& a100 = geo("A100-40GB");
  EXPECT_TRUE(build_layout(a100, {{"3g.20gb", 4}, {"4g.20gb", 0}}).ok());
  EXPECT_TRUE(build_layout(a100, {{"3g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}}).ok());

  auto bad = build_layout(a100, {{"2g.10gb", 0}, {"1g.10gb", 0}});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.reason.find("instance 2"), std::string::npos) << bad.reason;
  EXPECT_NE(bad.reason.find("overlaps 2g.10gb at 0"), std::string::npos) << bad.reason;

  bad = build_layout(a100, {{"1g.5gb", 7}});
  EXPECT_NE(bad.reason.find("cannot start at memory slice 7"), std::string::npos) << bad.reason;
  bad = build_layout(a100, {{"3g.20gb", 2}});
  EXPECT_NE(bad.reason.find("valid starts {0,4}"), std::string::npos) << bad.reason;
  bad = build_layout(a100, {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}, {"1g.5gb", 7}});
  EXPECT_FALSE(bad.ok());
  bad = build_layout(a100, {{"nope", 0}});
  EXPECT_NE(bad.reason.find("unknown MIG profile 'nope'"), std::string::npos);
}

TEST(MigLayout, FeasibleLayoutsAgreeWithBruteForceOverPlacements) {
  // Independent check: every placement sequence reachable by placing
  // instances one by one yields a count vector that feasible_layouts lists,
  // and every listed vector has a placement.
  for (const char* model : {"A100-40GB", "A30"}) {
    const auto& g = geo(model);
    std::set<MigCountVector> reachable;
    std::set<std::string> seen;  // states by their placements
    std::vector<MigGpuState> frontier{MigGpuState(g)};
    while (!frontier.empty()) {
      MigGpuState s = frontier.back();
      frontier.pop_back();
      if (!seen.insert(format_layout(s)).second) continue;
      reachable.insert(count_vector(s));
      for (int p = 0; p < g.size(); ++p) {
        for (int start : s.valid_start_list(p)) {
          MigGpuState next = s;
          next.place(p, start);
          frontier.push_back(next);
        }
      }
    }
    const auto& listed = feasible_layouts(g);
    EXPECT_EQ(std::set<MigCountVector>(listed.begin(), listed.end()), reachable) << model;
  }
  EXPECT_EQ(format_layout(*find_placement(geo("A100-40GB"), MigProfileCounts{{"3g.20gb", 1}, {"2g.10gb", 2}}).state),
            "2g.10gb@0 2g.10gb@2 3g.20gb@4");
}

}  // namespace
}  // namespace gpupack
