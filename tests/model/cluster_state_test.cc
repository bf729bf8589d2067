#include "model/cluster_state.h"

#include <gtest/gtest.h>

#include <random>

namespace gpupack {
namespace {

std::vector<NodeSpec> two_nodes() {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  return {{"a", 8000, 32768, 2, t4}, {"b", 4000, 16384, 4, t4}};
}

Request shared(int64_t cpu, int32_t milli) { return {cpu, 1024, 1, milli, 0}; }

// Every observable quantity of a state, for exact comparisons.
std::vector<int64_t> snapshot(const ClusterState& s) {
  std::vector<int64_t> v{s.gpu_used_milli(), s.bound_pod_count()};
  for (int i = 0; i < s.node_count(); ++i) {
    const NodeId n{i};
    v.push_back(s.cpu_free_milli(n));
    v.push_back(s.memory_free_mib(n));
    v.push_back(s.gpu_free_total_milli(n));
    for (int32_t f : s.gpu_free_milli(n)) v.push_back(f);
    for (uint16_t c : s.shape_counts(n)) v.push_back(c);
  }
  return v;
}

TEST(ClusterState, BindChargesCpuMemoryAndTheChosenGpus) {
  ClusterState s(two_nodes());
  ASSERT_TRUE(s.bind(PodId{0}, shared(1000, 300), {NodeId{0}, 0b10, 300}).is_ok());
  EXPECT_EQ(s.cpu_free_milli(NodeId{0}), 7000);
  EXPECT_EQ(s.memory_free_mib(NodeId{0}), 32768 - 1024);
  EXPECT_EQ(s.gpu_free_milli(NodeId{0})[0], 1000);
  EXPECT_EQ(s.gpu_free_milli(NodeId{0})[1], 700);
  EXPECT_EQ(s.gpu_used_milli(), 300);
  EXPECT_EQ(s.shape_counts(NodeId{0})[0], 1);
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(ClusterState, FullyFreeOnlyWhileNothingIsAllocated) {
  ClusterState s(two_nodes());
  EXPECT_TRUE(s.fully_free(NodeId{0}));
  // Each dimension alone makes the node not fully free: GPU milli, CPU, memory.
  const std::vector<Request> pods = {{0, 0, 1, 100, 0}, {500, 0, 0, 0, 0}, {0, 512, 0, 0, 0}};
  for (size_t i = 0; i < pods.size(); ++i) {
    const auto mark = s.checkpoint();
    const uint32_t gpus = pods[i].gpu_count > 0 ? 0b01 : 0;
    ASSERT_TRUE(s.bind(PodId{0}, pods[i], {NodeId{0}, gpus, pods[i].gpu_milli}).is_ok());
    EXPECT_FALSE(s.fully_free(NodeId{0})) << "pod " << i;
    EXPECT_TRUE(s.fully_free(NodeId{1}));
    s.rollback(mark);
    EXPECT_TRUE(s.fully_free(NodeId{0})) << "pod " << i;
  }
}

TEST(ClusterState, RejectedBindChangesNothingAndNamesTheDimension) {
  ClusterState s(two_nodes());
  ASSERT_TRUE(s.bind(PodId{0}, shared(1000, 800), {NodeId{0}, 0b01, 800}).is_ok());
  const auto before = snapshot(s);
  const uint64_t version = s.version(NodeId{0});
  Status st = s.bind(PodId{1}, shared(1000, 300), {NodeId{0}, 0b01, 300});
  EXPECT_EQ(st.dimension, Dimension::kGpuMilli);
  st = s.bind(PodId{1}, shared(9000, 100), {NodeId{0}, 0b10, 100});
  EXPECT_EQ(st.dimension, Dimension::kCpu);
  st = s.bind(PodId{1}, {1000, 1 << 20, 0, 0, 0}, {NodeId{0}, 0, 0});
  EXPECT_EQ(st.dimension, Dimension::kMemory);
  const GpuModelId v100 = *GpuCatalog::builtin().find("V100M32");
  st = s.bind(PodId{1}, {1000, 0, 1, 100, model_bit(v100)}, {NodeId{0}, 0b10, 100});
  EXPECT_EQ(st.dimension, Dimension::kModel);
  st = s.bind(PodId{1}, shared(100, 100), {NodeId{0}, 0b100, 100});  // GPU 2 does not exist
  EXPECT_EQ(st.code, Status::Code::kError);
  st = s.bind(PodId{0}, shared(100, 100), {NodeId{1}, 0b1, 100});  // already bound
  EXPECT_EQ(st.code, Status::Code::kError);
  EXPECT_EQ(snapshot(s), before);
  EXPECT_EQ(s.version(NodeId{0}), version);
}

TEST(ClusterState, UnbindRestoresAndRollbackUndoesExactly) {
  ClusterState s(two_nodes());
  const auto empty = snapshot(s);
  const auto mark = s.checkpoint();
  ASSERT_TRUE(s.bind(PodId{0}, {2000, 100, 2, 1000, 0}, {NodeId{1}, 0b0101, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, shared(500, 250), {NodeId{1}, 0b0010, 250}).is_ok());
  ASSERT_TRUE(s.unbind(PodId{0}).is_ok());
  EXPECT_FALSE(s.is_bound(PodId{0}));
  EXPECT_EQ(s.gpu_free_milli(NodeId{1})[0], 1000);
  s.rollback(mark);
  EXPECT_EQ(snapshot(s), empty);
  EXPECT_FALSE(s.is_bound(PodId{1}));
  EXPECT_TRUE(s.check_invariants().empty());
}

TEST(ClusterState, VersionChangesOnEveryChangeAndCopiesKeepThem) {
  ClusterState s(two_nodes());
  const uint64_t v0 = s.version(NodeId{0});
  ASSERT_TRUE(s.bind(PodId{0}, shared(1, 1), {NodeId{0}, 1, 1}).is_ok());
  const uint64_t v1 = s.version(NodeId{0});
  EXPECT_NE(v0, v1);
  ClusterState copy = s;
  EXPECT_EQ(copy.version(NodeId{0}), v1);
  ASSERT_TRUE(copy.unbind(PodId{0}).is_ok());
  ASSERT_TRUE(s.unbind(PodId{0}).is_ok());
  // Two states that diverged never share a stamp, even with equal contents.
  EXPECT_NE(copy.version(NodeId{0}), s.version(NodeId{0}));
  EXPECT_NE(s.version(NodeId{0}), v0);
}

TEST(ClusterState, ImpossibleNodesAreRefused) {
  EXPECT_THROW(ClusterState({{"x", -1, 0, 0, 0}}), std::invalid_argument);
  EXPECT_THROW(ClusterState({{"x", 1, 1, 0, 0}, {"x", 1, 1, 0, 0}}), std::invalid_argument);
  EXPECT_THROW(ClusterState({{"x", 1, 1, 33, 0}}), std::invalid_argument);
}

// Property: random bind / unbind / checkpoint / rollback sequences keep every
// invariant, never over-allocate, and a rollback restores the exact state.
TEST(ClusterState, RandomSequencesKeepInvariantsAndUndoExactly) {
  const GpuModelId g2 = *GpuCatalog::builtin().find("G2");
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back({"n" + std::to_string(i), 16000, 65536, 1 + i % 4, g2});
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    ClusterState s(nodes);
    std::vector<std::pair<ClusterState::Checkpoint, std::vector<int64_t>>> marks;
    for (int step = 0; step < 400; ++step) {
      const int op = static_cast<int>(rng() % 10);
      const PodId pod{static_cast<int32_t>(rng() % 40)};
      if (op < 6) {
        const NodeId n{static_cast<int32_t>(rng() % nodes.size())};
        const int gpus = s.gpu_count(n);
        Request r{static_cast<int64_t>(rng() % 6000), static_cast<int64_t>(rng() % 20000), 0, 0, 0};
        Assignment a{n, 0, 0};
        if (rng() % 3) {
          r.gpu_count = 1 + static_cast<int32_t>(rng() % gpus);
          r.gpu_milli = r.gpu_count > 1 ? 1000 : 1 + static_cast<int32_t>(rng() % 1000);
          while (std::popcount(a.gpu_mask) < r.gpu_count) a.gpu_mask |= 1u << (rng() % gpus);
          a.gpu_milli = r.gpu_milli;
        }
        const auto before = snapshot(s);
        const Status st = s.bind(pod, r, a);
        if (!st.is_ok()) {
          EXPECT_EQ(snapshot(s), before);
        }
      } else if (op < 8) {
        (void)s.unbind(pod);
      } else if (op < 9) {
        marks.push_back({s.checkpoint(), snapshot(s)});
      } else if (!marks.empty()) {
        s.rollback(marks.back().first);
        EXPECT_EQ(snapshot(s), marks.back().second);
        marks.pop_back();
      }
      const auto errors = s.check_invariants();
      ASSERT_TRUE(errors.empty()) << errors.front();
    }
    while (!marks.empty()) {
      s.rollback(marks.back().first);
      EXPECT_EQ(snapshot(s), marks.back().second);
      marks.pop_back();
    }
  }
}

}  // namespace
}  // namespace gpupack
