#include "sched/gang.h"

#include <gtest/gtest.h>

#include "policy/registry.h"
#include "sched/scheduler.h"
#include "sched_fixture.h"
#include "sim/random.h"

namespace gpupack {
namespace {

using testing::bound_count;
using testing::gpus;
using testing::uniform_nodes;

std::vector<PodId> pod_ids(int first, int n) {
  std::vector<PodId> v;
  for (int i = 0; i < n; ++i) v.push_back(PodId{first + i});
  return v;
}

GangRequest gang_of(int members, int gpus_each, int min_member = 0) {
  GangRequest g{"g", std::vector<Request>(static_cast<size_t>(members), gpus(gpus_each)), min_member};
  return g;
}

TEST(Gang, BindsEveryMemberOrNothing) {
  ClusterState s(uniform_nodes(2, 4));
  auto policy = make_policy("bestfit", {});
  Scheduler sched(*policy);
  GangPlacer placer(sched, s.node_count());
  const auto pods = pod_ids(0, 3);
  const GangPlacement p = placer.place(s, pods, gang_of(3, 4));
  EXPECT_FALSE(p.placed);
  EXPECT_EQ(s.bound_pod_count(), 0);
  EXPECT_EQ(s.gpu_used_milli(), 0);
  EXPECT_TRUE(s.check_invariants().empty());

  // With min_member 2 the first two members go, the third waits.
  const GangPlacement q = placer.place(s, pods, gang_of(3, 4, 2));
  ASSERT_TRUE(q.placed);
  EXPECT_EQ(q.placed_members, 2);
  EXPECT_EQ(bound_count(s, 0, 3), 2);
  EXPECT_EQ(q.level, "cluster");
}

TEST(Gang, PlanLeavesTheStateUnchanged) {
  ClusterState s(uniform_nodes(3, 8));
  auto policy = make_policy(
      "fgd",
      {42, std::make_shared<TargetWorkload>(TargetWorkload::from_requests(std::vector<Request>{gpus(1), gpus(8)}))});
  Scheduler sched(*policy);
  GangPlacer placer(sched, s.node_count());
  const auto before = s.gpu_used_milli();
  const GangPlacement p = placer.plan(s, pod_ids(0, 2), gang_of(2, 8));
  EXPECT_TRUE(p.placed);
  EXPECT_EQ(s.gpu_used_milli(), before);
  EXPECT_EQ(s.bound_pod_count(), 0);
}

TEST(Gang, PrefersOneNodeThenOneRack) {
  ClusterState s(uniform_nodes(4, 8));
  auto policy = make_policy("firstfit", {});
  Scheduler sched(*policy);
  TopologyLevel rack{"rack", {"r0", "r0", "r1", "r1"}};
  GangPlacer placer(sched, s.node_count(), {rack});
  // Two 4-GPU members fit on one node: they share it.
  const GangPlacement small = placer.place(s, pod_ids(0, 2), gang_of(2, 4));
  ASSERT_TRUE(small.placed);
  EXPECT_EQ(small.level, "node");
  EXPECT_EQ(small.assignments[0].node, small.assignments[1].node);
  // Node 0 is now full; rack r0 cannot hold two 8-GPU members, r1 can.
  const GangPlacement big = placer.place(s, pod_ids(2, 2), gang_of(2, 8));
  ASSERT_TRUE(big.placed);
  EXPECT_EQ(big.level, "rack");
  EXPECT_EQ(big.domain, "r1");
  EXPECT_EQ(rack.domain_of_node[index(big.assignments[0].node)], "r1");
  EXPECT_EQ(rack.domain_of_node[index(big.assignments[1].node)], "r1");
  EXPECT_NE(big.assignments[0].node, big.assignments[1].node);
}

TEST(Gang, TwoGangsOfSixtyPercentNeverBothHalfPlaced) {
  // 10 one-GPU nodes; each gang needs 6. Interleaved tries: first wins whole.
  ClusterState s(uniform_nodes(10, 1));
  auto policy = make_policy("bestfit", {});
  Scheduler sched(*policy);
  GangPlacer placer(sched, s.node_count());
  const GangPlacement a = placer.place(s, pod_ids(0, 6), gang_of(6, 1));
  const GangPlacement b = placer.place(s, pod_ids(6, 6), gang_of(6, 1));
  EXPECT_TRUE(a.placed);
  EXPECT_FALSE(b.placed);
  EXPECT_EQ(bound_count(s, 0, 6), 6);
  EXPECT_EQ(bound_count(s, 6, 6), 0);
  EXPECT_EQ(s.gpu_used_milli(), 6000);
}

// Property: random gangs and single pods arrive and leave; after every step
// the invariants hold and each job is bound whole (>= min_member) or not at all.
TEST(Gang, RandomArrivalsAndDeparturesNeverLeaveAGangPartlyBound) {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    ClusterState s(uniform_nodes(12, 4));
    auto policy = make_policy(seed % 2 ? "bestfit" : "gpupacking", {});
    Scheduler sched(*policy);
    TopologyLevel rack{"rack", {}};
    for (int i = 0; i < 12; ++i) rack.domain_of_node.push_back("r" + std::to_string(i / 4));
    GangPlacer placer(sched, s.node_count(), {rack});
    Rng rng(seed);
    struct Job {
      int first_pod, pods, required;
      bool running;
    };
    std::vector<Job> jobs;
    int next_pod = 0;
    for (int step = 0; step < 400; ++step) {
      if (rng.below(3) != 0 || jobs.empty()) {
        const int members = rng.below(2) ? 1 : 2 + static_cast<int>(rng.below(7));
        GangRequest g{"j", {}, rng.below(3) == 0 ? 1 + static_cast<int>(rng.below(static_cast<uint64_t>(members))) : 0};
        for (int m = 0; m < members; ++m) {
          Request r = rng.below(4) == 0 ? Request{500, 512, 1, 300 + 100 * static_cast<int32_t>(rng.below(5)), 0}
                                        : gpus(1 + static_cast<int>(rng.below(4)));
          g.members.push_back(r);
        }
        const GangPlacement p = placer.place(s, pod_ids(next_pod, members), g);
        jobs.push_back({next_pod, members, g.required(), p.placed});
        EXPECT_EQ(p.placed_members, bound_count(s, next_pod, members));
        next_pod += members;
      } else {
        Job& j = jobs[rng.below(jobs.size())];
        for (int i = 0; i < j.pods; ++i) {
          if (s.is_bound(PodId{j.first_pod + i})) {
            ASSERT_TRUE(s.unbind(PodId{j.first_pod + i}).is_ok());
          }
        }
        j.running = false;
      }
      s.commit();
      ASSERT_TRUE(s.check_invariants().empty()) << "seed " << seed << " step " << step;
      for (const Job& j : jobs) {
        const int b = bound_count(s, j.first_pod, j.pods);
        if (j.running)
          ASSERT_GE(b, j.required) << "seed " << seed << " step " << step;
        else
          ASSERT_EQ(b, 0) << "seed " << seed << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace gpupack
