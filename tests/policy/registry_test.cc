// The policy registry is one table: names, help, docs and the experiment
// runner all follow it, and adding a policy is one table line (shown here by
// registering a fixture policy at run time).
#include "policy/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "defrag/methods.h"
#include "policy/gpu_choice.h"
#include "sched/scheduler.h"
#include "sim/experiment.h"
#include "sim/synthetic.h"

namespace gpupack {
namespace {

// LastFit: the feasible node with the highest index (a fixture, not shipped).
// Its score depends on which node it is, so it says so (scores_by_state()
// false): once registered it stays in the process's table, and the node-class
// tests that run every registered policy must not share its scores within a
// class of identical nodes.
class LastFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "lastfit-fixture"; }
  bool scores_by_state() const override { return false; }
  NodeScore score(const ClusterState& state, NodeId node, const Request& req) override {
    return {static_cast<int64_t>(index(node)), choose_gpus_first_fit(state.gpu_free_milli(node), req)};
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PolicyRegistry, EveryEntryHasANameASummaryAndAFactoryThatAgree) {
  ASSERT_FALSE(policy_table().empty());
  auto target = std::make_shared<const TargetWorkload>();
  for (const PolicyInfo& p : policy_table()) {
    EXPECT_FALSE(p.summary.empty()) << p.name;
    EXPECT_EQ(p.name, std::string(make_policy(p.name, {1, target})->name()));
  }
  EXPECT_THAT(policy_name_list(), ::testing::HasSubstr("fgd"));
  try {
    make_policy("nope", {});
    FAIL() << "unknown policy accepted";
  } catch (const std::invalid_argument& e) {
    for (const auto& name : policy_names()) EXPECT_THAT(e.what(), ::testing::HasSubstr(name));
  }
}

TEST(PolicyRegistry, DocsListEveryPolicyAndDefragMethod) {
  const std::string algorithms = read_text(std::string(GPUPACK_SOURCE_DIR) + "/docs/ALGORITHMS.md");
  ASSERT_FALSE(algorithms.empty());
  for (const auto& name : policy_names()) EXPECT_THAT(algorithms, ::testing::HasSubstr("| `" + name + "` |")) << name;
  const std::string defrag = read_text(std::string(GPUPACK_SOURCE_DIR) + "/docs/DEFRAG.md");
  for (const auto& name : defrag_method_names()) EXPECT_THAT(defrag, ::testing::HasSubstr("`" + name + "`")) << name;
}

TEST(PolicyRegistry, ANewPolicyIsOneTableLineAndWorksEverywhereByName) {
  register_policy({"lastfit-fixture", "the feasible node with the highest index",
                   [](const PolicyOptions&) { return std::make_unique<LastFitPolicy>(); }});
  EXPECT_THROW(register_policy({"lastfit-fixture", "again",
                                [](const PolicyOptions&) { return std::make_unique<LastFitPolicy>(); }}),
               std::invalid_argument);
  EXPECT_THAT(policy_name_list(), ::testing::HasSubstr("lastfit-fixture"));

  // The experiment runner takes it by name, like any built-in policy.
  SyntheticOptions opt;
  opt.node_count = 30;
  ExperimentSpec spec;
  spec.nodes = synthetic_nodes(opt);
  spec.trace = synthetic_workload(opt, ClusterState(spec.nodes).gpu_capacity_milli());
  spec.policies = {"lastfit-fixture", "firstfit"};
  spec.seeds = {7};
  spec.threads = 1;
  const auto runs = run_experiment(spec);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].policy, "lastfit-fixture");
  // Its first placement is on the last node that fits, firstfit's on the first.
  ASSERT_FALSE(runs[0].placements.empty());
  ASSERT_TRUE(valid(runs[0].placements[0].node));
  ASSERT_TRUE(valid(runs[1].placements[0].node));
  EXPECT_GT(index(runs[0].placements[0].node), index(runs[1].placements[0].node));
}

TEST(DefragMethods, OneTableNamesChecksAndPlans) {
  ASSERT_EQ(defrag_method_names().size(), defrag_method_table().size());
  for (const auto& m : defrag_method_table()) {
    EXPECT_FALSE(m.summary.empty());
    EXPECT_NO_THROW(check_defrag_method(m.name));
  }
  try {
    check_defrag_method("nope");
    FAIL();
  } catch (const std::invalid_argument& e) {
    for (const auto& name : defrag_method_names()) EXPECT_THAT(e.what(), ::testing::HasSubstr(name));
  }
}

}  // namespace
}  // namespace gpupack
