#include "model/node_classes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "model/cluster_state.h"

namespace gpupack {
namespace {

// Two kinds of plain T4 nodes, three of each, and one A100 with a hardware
// setup (always a class of its own).
std::vector<NodeSpec> mixed_nodes() {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  const GpuModelId a100 = *GpuCatalog::builtin().find("A100-40GB");
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back({"small" + std::to_string(i), 8000, 32768, 2, t4});
  for (int i = 0; i < 3; ++i) nodes.push_back({"big" + std::to_string(i), 16000, 65536, 4, t4});
  NodeSpec hw{"hw", 16000, 65536, 2, a100};
  hw.gpus = {GpuSetup{}, GpuSetup{}};
  nodes.push_back(hw);
  return nodes;
}

// The partition of the nodes into classes, as sets of node ids.
std::set<std::set<int32_t>> partition(const ClusterState& s) {
  std::set<std::set<int32_t>> out;
  const NodeClasses& c = s.node_classes();
  for (int32_t k : c.classes()) {
    std::set<int32_t> members;
    for (int i = 0; i < s.node_count(); ++i)
      if (c.class_of(i) == k) members.insert(i);
    out.insert(members);
  }
  return out;
}

// The same partition from scratch: nodes grouped by pairwise equality.
std::set<std::set<int32_t>> brute_partition(const ClusterState& s) {
  std::set<std::set<int32_t>> out;
  std::vector<bool> done(static_cast<size_t>(s.node_count()), false);
  for (int i = 0; i < s.node_count(); ++i) {
    if (done[static_cast<size_t>(i)]) continue;
    std::set<int32_t> members;
    for (int j = i; j < s.node_count(); ++j)
      if (!done[static_cast<size_t>(j)] && s.same_node_state(NodeId{i}, NodeId{j})) {
        members.insert(j);
        done[static_cast<size_t>(j)] = true;
      }
    out.insert(members);
  }
  return out;
}

TEST(NodeClasses, IdenticalNodesShareAClassAndHardwareNodesStandAlone) {
  ClusterState s(mixed_nodes());
  EXPECT_EQ(s.node_classes().classes().size(), 3U);  // small, big, hw
  EXPECT_EQ(partition(s), (std::set<std::set<int32_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  const Request half{1000, 1024, 1, 500, 0};
  ASSERT_TRUE(s.bind(PodId{0}, half, {NodeId{1}, 0b01, 500}).is_ok());
  EXPECT_EQ(partition(s), (std::set<std::set<int32_t>>{{0, 2}, {1}, {3, 4, 5}, {6}}));
  // The same pod on another small node's other GPU: free milli per GPU in
  // order differs, so the two nodes stay apart.
  ASSERT_TRUE(s.bind(PodId{1}, half, {NodeId{2}, 0b10, 500}).is_ok());
  EXPECT_EQ(s.node_classes().classes().size(), 5U);
  ASSERT_TRUE(s.unbind(PodId{0}).is_ok());
  ASSERT_TRUE(s.unbind(PodId{1}).is_ok());
  EXPECT_EQ(partition(s), (std::set<std::set<int32_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(NodeClasses, FirstMemberFollowsTheTieOrder) {
  ClusterState s(mixed_nodes());
  const NodeClasses& c = s.node_classes();
  EXPECT_EQ(c.first(c.class_of(4)), 3);  // index order by default
  const uint64_t stamp = s.tie_order_stamp();
  s.set_tie_order({5, 1, 3, 9, 0, 7, 2});
  EXPECT_NE(s.tie_order_stamp(), stamp);
  EXPECT_EQ(c.first(c.class_of(0)), 1);  // small: ranks 5, 1, 3
  EXPECT_EQ(c.first(c.class_of(3)), 4);  // big: ranks 9, 0, 7
  EXPECT_TRUE(s.check_invariants().empty());
  EXPECT_THROW(s.set_tie_order({1, 2}), std::invalid_argument);
}

// Random binds, unbinds and rollbacks: after each step the classes equal a
// grouping from scratch, and a state rebuilt from the bound pods groups the
// nodes the same way.
TEST(NodeClasses, StayEqualToARebuildUnderRandomBindsUnbindsAndRollbacks) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    ClusterState s(mixed_nodes());
    if (round % 2 == 1) s.set_tie_order({6, 5, 4, 3, 2, 1, 0});
    int next_pod = 0;
    for (int step = 0; step < 200; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 6) {
        const int node = static_cast<int>(rng() % static_cast<uint64_t>(s.node_count()));
        const int gpus = s.gpu_count(NodeId{node});
        const bool whole = rng() % 3 == 0;
        const int32_t milli = whole ? 1000 : static_cast<int32_t>(100 * (1 + rng() % 9));
        const uint32_t mask = 1u << (rng() % static_cast<uint64_t>(gpus));
        const Request req{static_cast<int64_t>(500 * (1 + rng() % 4)), 1024, 1, milli, 0};
        (void)s.bind(PodId{next_pod++}, req, {NodeId{node}, mask, milli});
      } else if (op < 9) {
        std::vector<PodId> bound = s.bound_pods();
        if (!bound.empty()) {
          ASSERT_TRUE(s.unbind(bound[rng() % bound.size()]).is_ok());
        }
      } else {
        const auto mark = s.checkpoint();
        for (int k = 0; k < 3; ++k) {
          const int node = static_cast<int>(rng() % 6);
          (void)s.bind(PodId{next_pod++}, {1000, 1024, 1, 300, 0}, {NodeId{node}, 1u, 300});
        }
        s.rollback(mark);
      }
      ASSERT_EQ(partition(s), brute_partition(s)) << "round " << round << " step " << step;
      const std::vector<std::string> errors = s.check_invariants();
      ASSERT_TRUE(errors.empty()) << errors.front();
    }
    ClusterState rebuilt(mixed_nodes());
    for (PodId p : s.bound_pods()) ASSERT_TRUE(rebuilt.bind(p, s.request(p), s.assignment(p)).is_ok());
    EXPECT_EQ(partition(rebuilt), partition(s));
  }
}

}  // namespace
}  // namespace gpupack
