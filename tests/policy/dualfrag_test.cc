// dualfrag (policy/dualfrag.h): the packing loss decides above FGD's score.
#include <gtest/gtest.h>

#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const GpuModelId kG2 = *GpuCatalog::builtin().find("G2");

std::shared_ptr<const TargetWorkload> workload(int n650, int n470, int n320) {
  std::vector<Request> pods;
  for (int i = 0; i < n650; ++i) pods.push_back({2000, 0, 1, 650, 0});
  for (int i = 0; i < n470; ++i) pods.push_back({2000, 0, 1, 470, 0});
  for (int i = 0; i < n320; ++i) pods.push_back({2000, 0, 1, 320, 0});
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 1.0));
}

// Node 0: one GPU holding a 470 (530 free); node 1: one fresh GPU.
ClusterState two_nodes() {
  ClusterState s({{"half", 64000, 0, 1, kG2}, {"fresh", 64000, 0, 1, kG2}});
  EXPECT_TRUE(s.bind(PodId{0}, {2000, 0, 1, 470, 0}, {NodeId{0}, 1u, 470}).is_ok());
  return s;
}

TEST(DualFrag, AShortPartnerGoesWhereTheWorkloadNeedsItNotWhereFgdSeesTheLeastFragment) {
  // Mostly 650s, which only a 320 can complete; 470s pair with each other.
  // A 320 beside the 470 leaves 210 that nothing fills and takes the gap a
  // 470 would fill (loss 1/2 of a GPU: 320s are worth 0 here, 650s are too
  // many to pair). On the fresh GPU it leaves 680 for a 650 (loss 0).
  // FGD prefers the half-used GPU: most of the target (650) cannot use its
  // 530 free milli, so filling it lowers F the most.
  const auto target = workload(90, 5, 5);
  const Request pod320{2000, 0, 1, 320, 0};
  {
    const ClusterState s = two_nodes();
    auto fgd = make_policy("fgd", {1, target});
    EXPECT_EQ(Scheduler(*fgd).decide(s, pod320).assignment.node, NodeId{0});
    auto pool = make_policy("poolfrag", {1, target});
    EXPECT_EQ(Scheduler(*pool).decide(s, pod320).assignment.node, NodeId{0});
  }
  const ClusterState s = two_nodes();
  auto dual = make_policy("dualfrag", {1, target});
  const Decision d = Scheduler(*dual).decide(s, pod320);
  ASSERT_TRUE(d.placed());
  EXPECT_EQ(d.assignment.node, NodeId{1});
  // With as many 320s as 650s the 320s are worth 1/3: the half GPU still loses
  // (1/2 - 1/3), so the pod still opens the fresh GPU.
  auto balanced = make_policy("dualfrag", {1, workload(50, 50, 50)});
  EXPECT_EQ(Scheduler(*balanced).decide(s, pod320).assignment.node, NodeId{1});
}

TEST(DualFrag, AmongPlacementsThatLoseNothingFgdDecides) {
  // A 470 loses nothing on the half GPU (it completes the pair) or on the
  // fresh one (it starts one); FGD's score, filling the gap, decides.
  const ClusterState s = two_nodes();
  auto dual = make_policy("dualfrag", {1, workload(10, 50, 10)});
  auto fgd = make_policy("fgd", {1, workload(10, 50, 10)});
  const Request pod470{2000, 0, 1, 470, 0};
  EXPECT_EQ(Scheduler(*dual).decide(s, pod470).assignment.node, Scheduler(*fgd).decide(s, pod470).assignment.node);
  EXPECT_EQ(Scheduler(*dual).decide(s, pod470).assignment.node, NodeId{0});
}

// Two 2-GPU, 64-core nodes (32 cores per GPU); the workload is 500s alone, so
// a 500 loses nothing and changes F alike on either node, and no reserve
// group exists (no pod takes a whole node). Node 0 holds a whole-GPU pod,
// node 1 is fully free. A 500 with 20 cores asks more CPU per GPU milli (40
// cores per GPU) than the nodes have: it takes the fully free node.
TEST(DualFrag, ACpuHeavySharedPodTakesAFullyFreeNodeBeforeAPartlyUsedOne) {
  ClusterState s({{"used", 64000, 0, 2, kG2}, {"fresh", 64000, 0, 2, kG2}});
  ASSERT_TRUE(s.bind(PodId{0}, {2000, 0, 1, 1000, 0}, {NodeId{0}, 1u, 1000}).is_ok());
  std::vector<Request> pods(20, Request{20000, 0, 1, 500, 0});
  const auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 1.0));
  const Request heavy{20000, 0, 1, 500, 0};
  auto dual = make_policy("dualfrag", {1, target});
  EXPECT_EQ(Scheduler(*dual).decide(s, heavy).assignment.node, NodeId{1});
  // Without the key best fit decides (capfrag, poolfrag); and dualfrag
  // decides as capfrag where the key does not apply: a shared pod within the
  // node's CPU per GPU (16 cores for 500 milli is exactly its share), a pod
  // that takes a whole GPU (S: node 1's stranded 500 milli goes).
  auto cap = make_policy("capfrag", {1, target});
  auto pool = make_policy("poolfrag", {1, target});
  EXPECT_EQ(Scheduler(*cap).decide(s, heavy).assignment.node, NodeId{0});
  EXPECT_EQ(Scheduler(*pool).decide(s, heavy).assignment.node, NodeId{0});
  const Request light{16000, 0, 1, 500, 0};
  const Request whole{20000, 0, 1, 1000, 0};
  EXPECT_EQ(Scheduler(*cap).decide(s, light).assignment.node, NodeId{0});
  EXPECT_EQ(Scheduler(*dual).decide(s, light).assignment.node, NodeId{0});
  EXPECT_EQ(Scheduler(*cap).decide(s, whole).assignment.node, NodeId{1});
  EXPECT_EQ(Scheduler(*dual).decide(s, whole).assignment.node, NodeId{1});
  // Once node 1 is partly used too, best fit decides again: node 0 is left
  // with less free GPU.
  ASSERT_TRUE(s.bind(PodId{1}, {1000, 0, 1, 500, 0}, {NodeId{1}, 1u, 500}).is_ok());
  EXPECT_EQ(Scheduler(*dual).decide(s, heavy).assignment.node, NodeId{0});
}

// The pool slack stays above that key: three 2-GPU, 64-core nodes, a T4 and
// two G2, with as many T4-only as G2-only pods (slack T4 1, G2 2, as in
// poolfrag's test); the T4 node and g2-b are fully free, g2-a holds a
// whole-GPU pod. Loss, F and S rank the three alike for a CPU-heavy 500 that
// may go anywhere: it goes to the G2 pool, and there to the fully free g2-b.
TEST(DualFrag, ThePoolSlackDecidesBeforeAFullyFreeNode) {
  const GpuModelId t4 = *GpuCatalog::builtin().find("T4");
  ClusterState s({{"t4", 64000, 0, 2, t4}, {"g2-a", 64000, 0, 2, kG2}, {"g2-b", 64000, 0, 2, kG2}});
  ASSERT_TRUE(s.bind(PodId{0}, {2000, 0, 1, 1000, model_bit(kG2)}, {NodeId{1}, 1u, 1000}).is_ok());
  std::vector<Request> pods;
  for (const ModelMask mask : {model_bit(t4), model_bit(kG2), ModelMask{0}})
    for (int i = 0; i < 10; ++i) pods.push_back({20000, 0, 1, 500, mask});
  const auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(pods, {}, 1.0));
  const Request any{20000, 0, 1, 500, 0};
  auto dual = make_policy("dualfrag", {1, target});
  EXPECT_EQ(Scheduler(*dual).decide(s, any).assignment.node, NodeId{2});
  auto pool = make_policy("poolfrag", {1, target});
  EXPECT_EQ(Scheduler(*pool).decide(s, any).assignment.node, NodeId{1});  // best fit in the G2 pool
}

TEST(DualFrag, RefusesNoRequestThatFitsAndFailsWhatFitsNowhere) {
  const ClusterState s = two_nodes();
  auto dual = make_policy("dualfrag", {1, workload(10, 10, 10)});
  Scheduler sched(*dual);
  EXPECT_TRUE(sched.decide(s, Request{2000, 0, 1, 1000, 0}).placed());   // the fresh GPU
  EXPECT_TRUE(sched.decide(s, Request{2000, 0, 0, 0, 0}).placed());      // CPU only
  EXPECT_FALSE(sched.decide(s, Request{2000, 0, 2, 1000, 0}).placed());  // two GPUs on one node: none
  EXPECT_FALSE(sched.decide(s, Request{90000, 0, 1, 100, 0}).placed());  // CPU: none
}

}  // namespace
}  // namespace gpupack
