// The whole-node reserve (policy/whole_node_reserve.h) on hand-built
// clusters whose reserves follow from the rule, and its key in dualfrag.
#include "policy/whole_node_reserve.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "policy/capfrag.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");
const GpuModelId kG3 = *GpuCatalog::builtin().find("G3");
const GpuModelId kT4 = *GpuCatalog::builtin().find("T4");

// A G3 node (8 GPUs, 128 cores: no other node's shape dominates it), two G2
// nodes (8 GPUs, 96 cores) and a 2-GPU T4 node: 26 GPUs.
std::vector<NodeSpec> cluster() {
  return {{"g3", 128000, 786432, 8, kG3},
          {"g2-a", 96000, 393216, 8, kG2},
          {"g2-b", 96000, 393216, 8, kG2},
          {"t4", 96000, 393216, 2, kT4}};
}

// `small` one-GPU pods of 8 cores; `exclusive` 8-GPU pods of 120 cores (only
// the G3 hosts them); `eight` 8-GPU pods of 64 cores (any 8-GPU node).
TargetWorkload workload(int exclusive, int eight, int small = 100) {
  std::vector<Request> pods(static_cast<size_t>(small), Request{8000, 0, 1, 1000, 0});
  for (int i = 0; i < exclusive; ++i) pods.push_back({120000, 0, 8, 1000, 0});
  for (int i = 0; i < eight; ++i) pods.push_back({64000, 0, 8, 1000, 0});
  return TargetWorkload::from_requests(pods, {}, 0.85);  // the 8-GPU classes fall in the tail
}

// R = lambda + 2 sqrt(lambda): the expected pods and a safety stock.
double with_safety(double lambda) { return lambda + WholeNodeReserve::kSafetyStdDevs * std::sqrt(lambda); }

TEST(WholeNodeReserve, HoldsAGroupsFullyFreeNodesWhileTheyAreNoMoreThanItsExpectedPods) {
  const TargetWorkload target = workload(10, 2, 1000);
  ASSERT_EQ(target.tail.size(), 2u);  // the rule reads the whole workload, tail included
  WholeNodeReserve r(target);
  ClusterState s(cluster());
  EXPECT_TRUE(r.update(s));  // the maximal group starts holding
  // Workload GPU milli 1,000 x 1000 + 12 x 8000 = 1,096,000; cluster free 26,000.
  // Largest (8-GPU nodes): 12 pods -> lambda = 12 x 26,000 / 1,096,000 = 0.285,
  // R = 0.285 + 2 x 0.534 = 1.35, 3 free: not held.
  // Maximal (the G3): 10 pods -> lambda = 0.237, R = 1.21, 1 free: held.
  EXPECT_NEAR(r.expected(0), 12.0 * 26000 / 1096000, 1e-9);
  EXPECT_NEAR(r.reserve(0), with_safety(12.0 * 26000 / 1096000), 1e-9);
  EXPECT_EQ(r.free_nodes(0), 3);
  EXPECT_NEAR(r.expected(1), 10.0 * 26000 / 1096000, 1e-9);
  EXPECT_NEAR(r.reserve(1), with_safety(10.0 * 26000 / 1096000), 1e-9);
  EXPECT_EQ(r.free_nodes(1), 1);
  EXPECT_TRUE(r.reserved(s, NodeId{0}));
  EXPECT_FALSE(r.reserved(s, NodeId{1}));
  EXPECT_FALSE(r.reserved(s, NodeId{3}));  // in no group
  EXPECT_FALSE(r.update(s));               // nothing changed

  // One pod on each G2: one fully free 8-GPU node left, at most R = 1.29.
  // The largest group now holds too, but only fully free nodes are held.
  ASSERT_EQ(s.bind(PodId{0}, Request{8000, 0, 1, 1000, 0}, {NodeId{1}, 1u, 1000}).code, Status::Code::kSuccess);
  ASSERT_EQ(s.bind(PodId{1}, Request{8000, 0, 1, 1000, 0}, {NodeId{2}, 1u, 1000}).code, Status::Code::kSuccess);
  EXPECT_TRUE(r.update(s));
  EXPECT_NEAR(r.reserve(0), with_safety(12.0 * 24000 / 1096000), 1e-9);
  EXPECT_EQ(r.free_nodes(0), 1);
  EXPECT_TRUE(r.reserved(s, NodeId{0}));
  EXPECT_FALSE(r.reserved(s, NodeId{1}));
  // A pod on the G3 (CPU only) ends the G3's hold: it is no longer whole.
  ASSERT_EQ(s.bind(PodId{2}, Request{1000, 0, 0, 0, 0}, {NodeId{0}, 0u, 0}).code, Status::Code::kSuccess);
  r.update(s);
  EXPECT_EQ(r.free_nodes(1), 0);
  EXPECT_FALSE(r.reserved(s, NodeId{0}));
}

TEST(WholeNodeReserve, ReservesNothingWithoutPodsThatNeedAWholeNode) {
  // No 8-GPU pod: neither group has pods to hold for.
  WholeNodeReserve r(workload(0, 0));
  const ClusterState s(cluster());
  EXPECT_FALSE(r.update(s));
  for (int n = 0; n < 4; ++n) EXPECT_FALSE(r.reserved(s, NodeId{n})) << n;
  // A default-constructed reserve holds nothing either.
  WholeNodeReserve none;
  EXPECT_FALSE(none.update(s));
  EXPECT_FALSE(none.reserved(s, NodeId{0}));
}

TEST(WholeNodeReserve, OnNodesOfOneShapeOnlyTheLargestGroupCounts) {
  // Every node is maximal, so "only maximal nodes host it" says nothing:
  // the 120-core pods count as 8-GPU pods only.
  const ClusterState s({{"a", 128000, 786432, 8, kG3}, {"b", 128000, 786432, 8, kG3}});
  WholeNodeReserve r(workload(10, 0));
  r.update(s);
  EXPECT_EQ(r.reserve(1), 0.0);
  EXPECT_NEAR(r.expected(0), 10.0 * 16000 / 180000, 1e-9);
  EXPECT_EQ(r.free_nodes(0), 2);
}

// A maximal shape that hosts none of the group's pods (openb's A10 nodes:
// 1 GPU, 128 cores, 1 TiB) is not in the group: counting it would keep the
// hold off while the G3 nodes the pods need are taken.
TEST(WholeNodeReserve, TheMaximalGroupHoldsOnlyShapesItsPodsFit) {
  std::vector<NodeSpec> nodes = cluster();
  nodes.push_back({"a10", 128000, 1048576, 1, *GpuCatalog::builtin().find("A10")});
  ClusterState s(nodes);
  WholeNodeReserve r(workload(10, 2, 1000));
  EXPECT_TRUE(r.update(s));
  EXPECT_EQ(r.free_nodes(1), 1);  // the G3 alone, not the A10
  EXPECT_LT(r.reserve(1), 2.0);   // so counting the A10 would end the hold
  EXPECT_TRUE(r.reserved(s, NodeId{0}));
  EXPECT_FALSE(r.reserved(s, NodeId{4}));
  EXPECT_EQ(r.free_nodes(0), 3);  // the 8-GPU nodes, as without the A10
}

// The counts are kept per node class from the class log; they must equal a
// plain count of the groups' fully free nodes through binds, unbinds,
// rollbacks, and reads of another history (a copy) in between.
TEST(WholeNodeReserve, IncrementalCountsEqualAPlainCountOnRandomChanges) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 24; ++i) {
    if (i % 3 == 0) nodes.push_back({"g3-" + std::to_string(i), 128000, 786432, 8, kG3});
    if (i % 3 == 1) nodes.push_back({"g2-" + std::to_string(i), 96000, 393216, 8, kG2});
    if (i % 3 == 2) nodes.push_back({"t4-" + std::to_string(i), 96000, 393216, 2, kT4});
  }
  ClusterState s(nodes);
  const ClusterState original = s;
  WholeNodeReserve r(workload(10, 2));
  // The plain count: group 0 = the 8-GPU nodes, group 1 = the G3 nodes.
  const auto plain = [&](const ClusterState& st, int group) {
    int n = 0;
    for (int i = 0; i < st.node_count(); ++i) {
      const NodeId id{i};
      const bool member = group == 0 ? st.gpu_count(id) == 8 : st.cpu_total_milli(id) == 128000;
      n += member && st.gpu_free_total_milli(id) == 8000 && st.cpu_free_milli(id) == st.cpu_total_milli(id);
    }
    return n;
  };
  std::mt19937 rng(7);
  std::vector<PodId> bound;
  int next_pod = 0;
  for (int step = 0; step < 400; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 5 || bound.empty()) {  // bind a one-GPU or a CPU-only pod
      const NodeId node{static_cast<int>(rng() % nodes.size())};
      const bool gpu = rng() % 2 == 0;
      const Request req{4000, 0, gpu ? 1 : 0, gpu ? 500 : 0, 0};
      const Assignment where{node, gpu ? 1u << (rng() % static_cast<uint32_t>(s.gpu_count(node))) : 0u, gpu ? 500 : 0};
      if (s.bind(PodId{next_pod}, req, where).code == Status::Code::kSuccess) bound.push_back(PodId{next_pod});
      ++next_pod;
    } else if (what < 8) {  // unbind one
      const size_t k = rng() % bound.size();
      ASSERT_EQ(s.unbind(bound[k]).code, Status::Code::kSuccess);
      bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (what == 8) {  // a what-if: bind, read, roll back
      const ClusterState::Checkpoint mark = s.checkpoint();
      (void)s.bind(PodId{next_pod++}, Request{1000, 0, 0, 0, 0}, {NodeId{0}, 0u, 0});
      r.update(s);
      EXPECT_EQ(r.free_nodes(0), plain(s, 0)) << step;
      s.rollback(mark);
    } else {  // read another history, then come back
      r.update(original);
      EXPECT_EQ(r.free_nodes(0), plain(original, 0));
      EXPECT_EQ(r.free_nodes(1), plain(original, 1));
    }
    r.update(s);
    ASSERT_EQ(r.free_nodes(0), plain(s, 0)) << "step " << step;
    ASSERT_EQ(r.free_nodes(1), plain(s, 1)) << "step " << step;
  }
  EXPECT_GT(plain(s, 0), 0);  // the walk left some nodes whole and took others
  EXPECT_LT(plain(s, 0), 16);
}

// In dualfrag the key sits under FGD's score: a held node scores one step of
// kReserveKeyShift below what it would score without the reserve, and the
// others exactly as without it; the scheduler then keeps the G3 whole for a
// pod that fits elsewhere. Changing the held set changes scoring_epoch().
TEST(WholeNodeReserve, DualfragKeepsAHeldNodeWholeForPodsThatFitElsewhere) {
  // The maximal group holds (R 1.21, 1 free), the largest does not (R 1.35, 3 free).
  const auto target = std::make_shared<const TargetWorkload>(workload(10, 2, 1000));
  CapFragPolicy::Options with, without;
  with.packing_loss = without.packing_loss = true;
  with.whole_node_reserve = true;
  CapFragPolicy held(target, with, "with"), plain(target, without, "without");
  const ClusterState s(cluster());
  const Request pod{8000, 0, 1, 1000, 0};
  EXPECT_EQ(held.scoring_epoch(), 0u);
  held.prepare(s, pod);
  plain.prepare(s, pod);
  EXPECT_EQ(held.scoring_epoch(), 1u);  // the G3 became held
  const int64_t step = int64_t{1} << CapFragPolicy::kReserveKeyShift;
  EXPECT_EQ(held.score(s, NodeId{0}, pod).score, plain.score(s, NodeId{0}, pod).score);
  for (int n = 1; n < 4; ++n)
    EXPECT_EQ(held.score(s, NodeId{n}, pod).score, plain.score(s, NodeId{n}, pod).score + step) << n;
  auto dualfrag = make_policy("dualfrag", {1, target});
  const Decision d = Scheduler(*dualfrag).decide(s, pod);
  ASSERT_TRUE(d.placed());
  EXPECT_NE(d.assignment.node, NodeId{0});
  // The pod the G3 is held for still goes there: it fits nowhere else.
  const Decision big = Scheduler(*dualfrag).decide(s, Request{120000, 0, 8, 1000, 0});
  ASSERT_TRUE(big.placed());
  EXPECT_EQ(big.assignment.node, NodeId{0});
}

// A flip of a group's hold drops only the cached scores of the nodes it can
// change (the group's fully free nodes); every score after it equals a fresh
// policy's, node by node, for each request shape cached before the flip.
TEST(WholeNodeReserve, AFlipLeavesNoStaleScore) {
  const auto target = std::make_shared<const TargetWorkload>(workload(10, 2, 1000));
  CapFragPolicy::Options o;
  o.packing_loss = true;
  o.whole_node_reserve = true;
  std::vector<NodeSpec> nodes = cluster();
  nodes.push_back({"g2-c", 96000, 393216, 8, kG2});  // node 4
  ClusterState s(nodes);
  CapFragPolicy cached(target, o, "cached");
  const std::vector<Request> shapes = {{8000, 0, 1, 1000, 0}, {4000, 0, 1, 500, 0}, {64000, 0, 8, 1000, 0}};
  const auto score_all = [&](CapFragPolicy& p) {
    std::vector<int64_t> out;
    for (const Request& r : shapes) {
      p.prepare(s, r);
      for (int n = 0; n < s.node_count(); ++n) out.push_back(p.score(s, NodeId{n}, r).score);
    }
    return out;
  };
  // One pod on g2-a and on g2-b: the G3 and g2-c are the fully free 8-GPU
  // nodes, more than the largest group's R (about 1.5): not held.
  ASSERT_TRUE(s.bind(PodId{0}, Request{8000, 0, 1, 1000, 0}, {NodeId{1}, 1u, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, Request{8000, 0, 1, 1000, 0}, {NodeId{2}, 1u, 1000}).is_ok());
  score_all(cached);
  const uint64_t epoch = cached.scoring_epoch();
  // A CPU-only pod on the G3: g2-c alone is left, the largest group holds it.
  // Its cached scores (its version unchanged) must not survive the flip.
  ASSERT_TRUE(s.bind(PodId{2}, Request{1000, 0, 0, 0, 0}, {NodeId{0}, 0u, 0}).is_ok());
  const std::vector<int64_t> after = score_all(cached);
  EXPECT_GT(cached.scoring_epoch(), epoch);
  CapFragPolicy fresh(target, o, "fresh");
  EXPECT_EQ(after, score_all(fresh));
}

}  // namespace
}  // namespace gpupack
