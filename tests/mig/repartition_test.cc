#include "mig/repartition.h"

#include <gtest/gtest.h>

namespace gpupack {
namespace {

GpuModelId model(const char* name) { return *GpuCatalog::builtin().find(name); }

MigGpuInventory gpu(const char* node, int index, const char* model_name,
                    std::vector<std::pair<std::string, int>> layout, std::vector<bool> in_use = {},
                    bool mig_enabled = true) {
  const MigGeometry& geo = *mig_geometry(model_name);
  MigGpuInventory g;
  g.node = node;
  g.gpu_index = index;
  g.model = model(model_name);
  g.mig_enabled = mig_enabled;
  for (const auto& [name, start] : layout) g.layout.push_back({*geo.find(name), start});
  g.in_use = std::move(in_use);
  return g;
}

// Checks shared by every plan: the YAML validates, applying it yields the
// planned layouts, busy GPUs keep their exact instances.
void expect_plan_applies(const std::vector<MigGpuInventory>& gpus, const MigRepartitionPlan& plan) {
  const std::string yaml = plan.config_yaml();
  const auto errors = validate_mig_parted_config(yaml);
  ASSERT_TRUE(errors.empty()) << yaml << errors.front();
  const auto applied = apply_mig_parted_config(gpus, yaml, plan.node_labels);
  ASSERT_EQ(applied.size(), gpus.size());
  for (size_t k = 0; k < gpus.size(); ++k) {
    EXPECT_EQ(counts_by_name(applied[k]), counts_by_name(plan.gpus[k].after)) << gpus[k].node << " " << k;
    if (!plan.gpus[k].changed) {
      EXPECT_TRUE(applied[k] == plan.gpus[k].before) << "unchanged GPU moved: " << gpus[k].node << " " << k;
    }
    if (!gpus[k].idle()) {
      EXPECT_FALSE(plan.gpus[k].changed) << "busy GPU changed";
      EXPECT_TRUE(applied[k] == plan.gpus[k].before);
    }
  }
  for (const auto& [node, value] : plan.node_labels) {
    EXPECT_TRUE(plan.config.configs.count(value)) << node;
    EXPECT_LE(value.size(), 63u);
  }
}

// Hand-checked: A100-80GB node with a busy 7g, an idle GPU full of 1g.10gb,
// an idle empty GPU and an idle GPU holding one free 3g.40gb. Demand: two
// 3g.40gb and one 2g.20gb. The free 3g serves one; the other 3g and the 2g
// fit together on one GPU, and the empty GPU costs no existing instance:
// exactly one GPU (GPU 2) changes, to 3g.40gb + 2g.20gb.
TEST(MigRepartition, HandCheckedCaseChangesOneGpu) {
  const std::vector<MigGpuInventory> gpus = {
      gpu("a", 0, "A100-80GB", {{"7g.80gb", 0}}, {true}),
      gpu("a", 1, "A100-80GB",
          {{"1g.10gb", 0},
           {"1g.10gb", 1},
           {"1g.10gb", 2},
           {"1g.10gb", 3},
           {"1g.10gb", 4},
           {"1g.10gb", 5},
           {"1g.10gb", 6}}),
      gpu("a", 2, "A100-80GB", {}),
      gpu("a", 3, "A100-80GB", {{"3g.40gb", 0}}, {false}),
  };
  const MigDemand demand = {{model("A100-80GB"), {{"3g.40gb", 2}, {"2g.20gb", 1}}}};
  const auto plan = plan_mig_repartition(gpus, demand);

  EXPECT_EQ(plan.unmet_before.at(model("A100-80GB")), (MigProfileCounts{{"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_TRUE(plan.unmet_after.empty());
  EXPECT_EQ(plan.changed_gpus, 1);
  ASSERT_TRUE(plan.gpus[2].changed);
  EXPECT_EQ(counts_by_name(plan.gpus[2].after), (MigProfileCounts{{"2g.20gb", 1}, {"3g.40gb", 1}}));
  for (int k : {0, 1, 3}) EXPECT_FALSE(plan.gpus[k].changed) << k;
  ASSERT_EQ(plan.node_labels.size(), 1u);
  const std::string& cfg_name = plan.node_labels.at("a");
  // Node a's config lists every GPU: unchanged ones with their current counts.
  const auto& entries = plan.config.configs.at(cfg_name);
  int listed = 0;
  for (const auto& e : entries) listed += static_cast<int>(e.devices->size());
  EXPECT_EQ(listed, 4);
  expect_plan_applies(gpus, plan);
}

TEST(MigRepartition, GreedyFallbackSolvesTheHandCheckedCase) {
  const std::vector<MigGpuInventory> gpus = {
      gpu("a", 0, "A100-80GB", {{"7g.80gb", 0}}, {true}),
      gpu("a", 1, "A100-80GB", {{"1g.10gb", 0}, {"1g.10gb", 1}, {"1g.10gb", 2}}),
      gpu("a", 2, "A100-80GB", {}),
      gpu("a", 3, "A100-80GB", {{"3g.40gb", 0}}, {false}),
  };
  const MigDemand demand = {{model("A100-80GB"), {{"3g.40gb", 2}, {"2g.20gb", 1}}}};
  const auto exact = plan_mig_repartition(gpus, demand);
  const auto greedy = plan_mig_repartition(gpus, demand, /*max_exact_states=*/0);
  EXPECT_EQ(exact.method, "exact");
  EXPECT_EQ(greedy.method, "greedy");
  for (const auto* plan : {&exact, &greedy}) {
    EXPECT_EQ(plan->changed_gpus, 1) << plan->method;
    EXPECT_TRUE(plan->gpus[2].changed) << plan->method;
    EXPECT_TRUE(plan->unmet_after.empty()) << plan->method;
    expect_plan_applies(gpus, *plan);
  }
}

TEST(MigRepartition, FreeInstancesAreUsedBeforeAnyChange) {
  const std::vector<MigGpuInventory> gpus = {
      gpu("a", 0, "A100-40GB", {{"3g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}}, {true, false, false}),
      gpu("b", 0, "A100-40GB", {{"3g.20gb", 0}, {"3g.20gb", 4}}),
  };
  const MigDemand demand = {{model("A100-40GB"), {{"3g.20gb", 2}, {"2g.10gb", 1}, {"1g.5gb", 1}}}};
  const auto plan = plan_mig_repartition(gpus, demand);
  EXPECT_TRUE(plan.unmet_before.empty());
  EXPECT_EQ(plan.changed_gpus, 0);
  EXPECT_TRUE(plan.config.configs.empty());
  EXPECT_TRUE(plan.node_labels.empty());
}

TEST(MigRepartition, OnlyIdleGpusChange) {
  // The busy GPU has room for a 4g, but only idle GPUs may be repartitioned;
  // the idle one gets it even though it loses its free 1g.5gb instances.
  const std::vector<MigGpuInventory> gpus = {
      gpu("busy", 0, "A100-40GB", {{"3g.20gb", 4}}, {true}),
      gpu("idle", 0, "A100-40GB", {{"1g.5gb", 0}, {"1g.5gb", 1}}),
  };
  const MigDemand demand = {{model("A100-40GB"), {{"4g.20gb", 1}}}};
  auto plan = plan_mig_repartition(gpus, demand);
  EXPECT_FALSE(plan.gpus[0].changed);
  ASSERT_TRUE(plan.gpus[1].changed);
  EXPECT_EQ(counts_by_name(plan.gpus[1].after), (MigProfileCounts{{"4g.20gb", 1}}));
  EXPECT_EQ(plan.node_labels.count("busy"), 0u);
  expect_plan_applies(gpus, plan);

  // With no idle GPU the demand stays unmet and nothing changes.
  const std::vector<MigGpuInventory> all_busy = {gpus[0]};
  plan = plan_mig_repartition(all_busy, demand);
  EXPECT_EQ(plan.changed_gpus, 0);
  EXPECT_EQ(plan.unmet_after.at(model("A100-40GB")), (MigProfileCounts{{"4g.20gb", 1}}));
}

TEST(MigRepartition, DemandBeyondCapacityIsMetAsFarAsPossible) {
  // Two idle A30s (one with MIG disabled); demand: 4g.24gb x1, 2g.12gb x3.
  // Three instances can be served either way (2g x3 or 4g + 2g x2); on the
  // tie the larger instances win: one GPU 4g, the other 2g x2.
  const std::vector<MigGpuInventory> gpus = {
      gpu("n", 0, "A30", {}, {}, /*mig_enabled=*/false),
      gpu("n", 1, "A30", {{"1g.6gb", 0}}),
  };
  const MigDemand demand = {{model("A30"), {{"4g.24gb", 1}, {"2g.12gb", 3}}}};
  const auto plan = plan_mig_repartition(gpus, demand);
  EXPECT_EQ(plan.changed_gpus, 2);
  EXPECT_EQ(plan.unmet_after.at(model("A30")), (MigProfileCounts{{"2g.12gb", 1}}));
  MigProfileCounts total;
  for (const auto& g : plan.gpus) {
    for (const auto& [p, c] : counts_by_name(g.after)) total[p] += c;
  }
  EXPECT_EQ(total, (MigProfileCounts{{"2g.12gb", 2}, {"4g.24gb", 1}}));
  expect_plan_applies(gpus, plan);
}

TEST(MigRepartition, SeveralModelsAndNodes) {
  const std::vector<MigGpuInventory> gpus = {
      gpu("h1", 0, "H100-80GB", {}),
      gpu("h1", 1, "H100-80GB", {}),
      gpu("h2", 0, "H100-80GB", {}),
      gpu("x1", 0, "A100-40GB", {}),
  };
  const MigDemand demand = {{model("H100-80GB"), {{"1g.10gb", 9}}}, {model("A100-40GB"), {{"7g.40gb", 1}}}};
  const auto plan = plan_mig_repartition(gpus, demand);
  // 9 x 1g.10gb need two H100s (7 per GPU), the 7g one A100. The second
  // H100 is taken on node h1, which is reconfigured anyway, not on h2.
  EXPECT_EQ(plan.changed_gpus, 3);
  EXPECT_TRUE(plan.unmet_after.empty());
  const int h0 = plan.gpus[0].after.instance_count(), h1 = plan.gpus[1].after.instance_count();
  EXPECT_EQ(h0 + h1, 9);
  EXPECT_EQ(std::max(h0, h1), 7);
  EXPECT_FALSE(plan.gpus[2].changed);
  EXPECT_EQ(plan.node_labels.size(), 2u);
  EXPECT_EQ(plan.node_labels.count("h2"), 0u);
  expect_plan_applies(gpus, plan);
}

TEST(MigRepartition, AGpuAlreadyInMigModeIsChangedBeforeAWholeGpuIsSwitched) {
  // Node n: GPU 0 a whole GPU (MIG off), GPU 1 an idle MIG GPU with no
  // instances. Either could hold the demand; switching a whole GPU to MIG
  // needs it drained and reset, so GPU 1 is the one changed.
  const std::vector<MigGpuInventory> gpus = {gpu("n", 0, "A100-80GB", {}, {}, false), gpu("n", 1, "A100-80GB", {})};
  const MigDemand demand = {{model("A100-80GB"), {{"3g.40gb", 2}}}};
  for (size_t max_states : {size_t{50000}, size_t{1}}) {  // exact, then greedy
    const MigRepartitionPlan plan = plan_mig_repartition(gpus, demand, max_states);
    EXPECT_EQ(plan.changed_gpus, 1);
    EXPECT_FALSE(plan.gpus[0].changed) << plan.method;
    EXPECT_TRUE(plan.gpus[1].changed) << plan.method;
    EXPECT_TRUE(plan.unmet_after.empty());
  }
}

TEST(MigRepartition, DynamicMigGpusServeDemandWithoutAConfigThatWouldWipeThem) {
  // Node d: GPUs 0-1 dynamic MIG (instances made as pods arrive), GPU 2 a
  // whole GPU. The demand fits on the dynamic GPUs: nothing is reconfigured,
  // no config names node d, and the plan says which GPU serves it.
  std::vector<MigGpuInventory> gpus = {gpu("d", 0, "A100-80GB", {}), gpu("d", 1, "A100-80GB", {}),
                                       gpu("d", 2, "A100-80GB", {}, {}, false)};
  gpus[0].dynamic_layout = gpus[1].dynamic_layout = true;
  const MigDemand demand = {{model("A100-80GB"), {{"3g.40gb", 3}}}};
  for (size_t max_states : {size_t{50000}, size_t{1}}) {
    const MigRepartitionPlan plan = plan_mig_repartition(gpus, demand, max_states);
    EXPECT_EQ(plan.changed_gpus, 0) << plan.method;
    EXPECT_TRUE(plan.unmet_after.empty()) << plan.method;
    EXPECT_TRUE(plan.node_labels.empty()) << plan.method;
    EXPECT_FALSE(plan.gpus[2].changed);
    int served = 0;
    for (const MigGpuPlan& g : plan.gpus) served += g.on_demand ? counts_by_name(g.after).at("3g.40gb") : 0;
    EXPECT_EQ(served, 3) << plan.method;
  }
  // With a fixed-layout GPU changed on the same node, the dynamic GPUs are
  // still left out of that node's config.
  std::vector<MigGpuInventory> mixed = gpus;
  mixed[2] = gpu("d", 2, "A100-80GB", {});
  const MigRepartitionPlan plan = plan_mig_repartition(mixed, {{model("A100-80GB"), {{"1g.10gb", 21}}}});
  ASSERT_EQ(plan.changed_gpus, 1);
  ASSERT_EQ(plan.config.configs.size(), 1u);
  for (const MigPartedEntry& e : plan.config.configs.begin()->second) {
    ASSERT_TRUE(e.devices.has_value());
    EXPECT_EQ(*e.devices, std::vector<int>{2}) << "a dynamic GPU is in the config";
  }
}

TEST(MigRepartition, BadInputIsRefused) {
  const MigDemand none;
  EXPECT_THROW(plan_mig_repartition({gpu("a", 0, "A100-40GB", {}), gpu("a", 0, "A100-40GB", {})}, none),
               std::invalid_argument);
  auto bad = gpu("a", 0, "A100-40GB", {{"3g.20gb", 0}, {"4g.20gb", 0}});
  try {
    plan_mig_repartition({bad}, none);
    FAIL() << "overlapping current layout accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a GPU 0: current layout"), std::string::npos) << e.what();
  }
  auto v100 = gpu("v", 0, "A100-40GB", {});
  v100.model = model("V100M32");
  EXPECT_THROW(plan_mig_repartition({v100}, none), std::invalid_argument);
  EXPECT_THROW(plan_mig_repartition({gpu("a", 0, "A100-40GB", {})}, {{model("A100-40GB"), {{"3g.40gb", 1}}}}),
               std::invalid_argument);
  auto mismatch = gpu("a", 0, "A100-40GB", {{"3g.20gb", 0}}, {true, false});
  EXPECT_THROW(plan_mig_repartition({mismatch}, none), std::invalid_argument);
}

TEST(MigRepartition, ApplyRefusesALabelWithoutConfig) {
  const std::vector<MigGpuInventory> gpus = {gpu("a", 0, "A100-40GB", {})};
  const std::string yaml =
      "version: v1\nmig-configs:\n  one:\n    - devices: all\n      mig-enabled: true\n"
      "      mig-devices: {\"3g.20gb\": 2, \"1g.5gb\": 1}\n";
  EXPECT_THROW(apply_mig_parted_config(gpus, yaml, {{"a", "other"}}), std::invalid_argument);
  // 2 x 3g.20gb + 1g.5gb passes the schema (7 compute slices) but has no
  // placement on an A100: the two 3g.20gb take all eight memory slices.
  EXPECT_THROW(apply_mig_parted_config(gpus, yaml, {{"a", "one"}}), std::invalid_argument);
  // Unlabelled nodes are untouched.
  EXPECT_TRUE(apply_mig_parted_config(gpus, yaml, {})[0].empty());
}

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

// Exhaustive check on small A30 clusters: the greedy plan serves as many
// demanded instances as the best assignment of feasible layouts to the idle
// GPUs, and changes no more GPUs than the fewest any optimal assignment needs.
TEST(MigRepartition, MatchesExhaustiveSearchOnSmallA30Clusters) {
  const MigGeometry& geo = *mig_geometry("A30");
  const auto& layouts = feasible_layouts(geo);
  const std::vector<std::vector<std::pair<std::string, int>>> starts = {
      {}, {{"4g.24gb", 0}}, {{"2g.12gb", 0}, {"1g.6gb", 2}}, {{"1g.6gb", 0}, {"1g.6gb", 3}}};
  const std::vector<MigProfileCounts> demands = {
      {{"4g.24gb", 2}},
      {{"2g.12gb", 3}, {"1g.6gb", 1}},
      {{"1g.6gb", 5}, {"4g.24gb", 1}},
      {{"2g.12gb", 1}, {"1g.6gb", 2}},
      {{"1g.6gb+me", 2}, {"2g.12gb", 2}},
      {{"4g.24gb", 1}, {"2g.12gb", 1}, {"1g.6gb", 2}},
  };
  int cases = 0;
  for (size_t a = 0; a < starts.size(); ++a) {
    for (size_t b = 0; b < starts.size(); ++b) {
      for (size_t c = 0; c < starts.size(); ++c) {
        const std::vector<MigGpuInventory> gpus = {gpu("n", 0, "A30", starts[a]), gpu("n", 1, "A30", starts[b]),
                                                   gpu("m", 0, "A30", starts[c])};
        for (const auto& d : demands) {
          const auto want = count_vector(geo, d);
          auto served = [&](const std::vector<MigCountVector>& per_gpu) {
            int s = 0;
            for (int i = 0; i < geo.size(); ++i) {
              int have = 0;
              for (const auto& v : per_gpu) have += v[i];
              s += std::min<int>(have, want[i]);
            }
            return s;
          };
          std::vector<MigCountVector> cur;
          for (const auto& g : gpus) cur.push_back(count_vector(*build_layout(geo, g.layout).state));
          int best_served = -1, best_changes = 99;
          for (const auto& x : layouts) {
            for (const auto& y : layouts) {
              for (const auto& z : layouts) {
                const std::vector<MigCountVector> v = {x, y, z};
                const int s = served(v);
                int ch = 0;
                for (int k = 0; k < 3; ++k) ch += v[k] != cur[k];
                if (s > best_served || (s == best_served && ch < best_changes)) {
                  best_served = s;
                  best_changes = ch;
                }
              }
            }
          }
          const auto plan = plan_mig_repartition(gpus, {{model("A30"), d}});
          std::vector<MigCountVector> after;
          for (const auto& g : plan.gpus) after.push_back(count_vector(g.after));
          EXPECT_EQ(served(after), best_served) << a << b << c << " demand " << cases;
          EXPECT_EQ(plan.changed_gpus, best_changes) << a << b << c << " demand " << cases;
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 64 * 6);
}

}  // namespace
}  // namespace gpupack
