// When periodic defragmentation plans (fragmentation above a threshold, a
// large pending pod waiting past a bound) and its rolling move budget.
#include "execute/defrag_trigger.h"

#include <gtest/gtest.h>

#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using testing::node_json;
using testing::pod_json;

struct Small {
  std::vector<K8sNode> nodes{parse_node(node_json({.name = "a", .gpus = 8}))};
  std::vector<K8sPod> pods;
  ClusterState state{std::vector<NodeSpec>{nodes[0].spec}};
  Small() {
    // Four half-GPU pods on four GPUs: half of each stranded for whole-GPU pods.
    for (int g = 0; g < 4; ++g) {
      K8sPod p = parse_pod(pod_json({.name = "half-" + std::to_string(g), .gpu_milli = 500, .node = "a"}));
      Assignment where{NodeId{0}, 1u << g, 500};
      EXPECT_TRUE(state.bind(PodId{g}, p.request, where).is_ok());
      pods.push_back(p);
    }
    K8sPod big = parse_pod(pod_json({.name = "big", .gpus = 4}));
    big.created_unix_s = 1000;
    pods.push_back(big);
  }
};

TEST(DefragTrigger, FiresOnFragmentationOrALongWaitOnly) {
  Small c;
  TriggerOptions o;
  o.frag_above_pct = 90;
  o.wait_bound_s = 600;
  o.large_gpus = 2;
  TriggerDecision d = should_defrag(c.state, c.pods, 1000 + 599, o);
  EXPECT_FALSE(d.fire) << d.why;
  EXPECT_GT(d.frag_pct, 0);
  EXPECT_EQ(d.longest_wait_s, 599);
  d = should_defrag(c.state, c.pods, 1000 + 600, o);
  EXPECT_TRUE(d.fire);
  EXPECT_NE(d.why.find("ml/big (2+ GPUs) has waited 600 s"), std::string::npos) << d.why;
  // A pod below --large-gpus does not count.
  o.large_gpus = 5;
  EXPECT_FALSE(should_defrag(c.state, c.pods, 5000, o).fire);
  // Fragmentation above the threshold fires.
  o.frag_above_pct = d.frag_pct - 0.01;
  d = should_defrag(c.state, c.pods, 5000, o);
  EXPECT_TRUE(d.fire);
  EXPECT_NE(d.why.find("fragmentation"), std::string::npos);
  // No threshold: every round.
  EXPECT_TRUE(should_defrag(c.state, c.pods, 5000, TriggerOptions{}).fire);
}

TEST(DefragTrigger, RollingBudgetForgetsMovesOlderThanTheWindow) {
  RollingBudget b(10, 3600);
  EXPECT_EQ(b.left(0), 10);
  b.spend(0, 6);
  b.spend(1800, 3);
  EXPECT_EQ(b.left(1800), 1);
  EXPECT_EQ(b.left(3599), 1);
  EXPECT_EQ(b.left(3600), 7);  // the first six are an hour old
  EXPECT_EQ(b.left(5400), 10);
  RollingBudget unlimited(-1, 3600);
  unlimited.spend(0, 100);
  EXPECT_EQ(unlimited.left(0), -1);
}

}  // namespace
}  // namespace gpupack
