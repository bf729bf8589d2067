#include "sched/preemption.h"

#include <gtest/gtest.h>

#include "policy/registry.h"
#include "sched_fixture.h"

namespace gpupack {
namespace {

using testing::gpus;
using testing::uniform_nodes;

struct Fixture {
  ClusterState state{uniform_nodes(4, 8)};
  std::unique_ptr<Policy> policy = make_policy("bestfit", {});
  Scheduler sched{*policy};
  GangPlacer placer{sched, 4};
  PreemptionPlanner planner{placer};

  void bind(int pod, int node, int count, uint32_t mask) {
    ASSERT_TRUE(state.bind(PodId{pod}, gpus(count), {NodeId{node}, mask, 1000}).is_ok());
  }
};

TEST(Preemption, LowestPriorityThenFewestVictims) {
  Fixture f;
  f.bind(0, 0, 8, 0xff);  // job 0: gang member, priority 0
  f.bind(1, 1, 8, 0xff);  // job 0: gang member
  f.bind(2, 2, 8, 0xff);  // job 1: priority 1, one pod
  f.bind(3, 3, 4, 0x0f);  // job 2: priority 0
  f.bind(4, 3, 4, 0xf0);  // job 3: priority 0
  f.state.commit();
  const std::vector<RunningJob> running = {{0, 0, kNoEstimate, {PodId{0}, PodId{1}}},
                                           {1, 1, kNoEstimate, {PodId{2}}},
                                           {2, 0, kNoEstimate, {PodId{3}}},
                                           {3, 0, kNoEstimate, {PodId{4}}}};
  const GangRequest job{"urgent", {gpus(4)}, 0};
  const PreemptionPlan p = f.planner.plan(f.state, running, job, std::vector<PodId>{PodId{9}}, 5);
  ASSERT_TRUE(p.feasible) << p.reason;
  // One priority-0 pod on node 3 makes room; not the priority-1 job, not the gang.
  ASSERT_EQ(p.victims.size(), 1u);
  EXPECT_TRUE(p.victims[0].job == 2 || p.victims[0].job == 3);
  EXPECT_EQ(p.max_victim_priority, 0);
  EXPECT_EQ(p.victim_pods, 1);
  EXPECT_EQ(p.placement.assignments[0].node, NodeId{3});
  EXPECT_FALSE(p.victims[0].reason.empty());
  EXPECT_EQ(f.state.bound_pod_count(), 5);  // planning changes nothing
  EXPECT_TRUE(f.state.check_invariants().empty());
}

TEST(Preemption, GangVictimsAreEvictedWhole) {
  Fixture f;
  f.bind(0, 0, 8, 0xff);  // job 0: gang of two, priority 0
  f.bind(1, 1, 8, 0xff);
  f.bind(2, 2, 8, 0xff);  // job 1: priority 1
  f.bind(3, 3, 8, 0xff);  // job 2: priority 1
  f.state.commit();
  const std::vector<RunningJob> running = {
      {0, 0, kNoEstimate, {PodId{0}, PodId{1}}}, {1, 1, kNoEstimate, {PodId{2}}}, {2, 1, kNoEstimate, {PodId{3}}}};
  const GangRequest job{"urgent", {gpus(8)}, 0};
  const PreemptionPlan p = f.planner.plan(f.state, running, job, std::vector<PodId>{PodId{9}}, 5);
  ASSERT_TRUE(p.feasible);
  // The lowest priority wins over the fewest pods: the whole gang goes.
  ASSERT_EQ(p.victims.size(), 1u);
  EXPECT_EQ(p.victims[0].job, 0);
  EXPECT_EQ(p.victims[0].pods, 2);
  EXPECT_EQ(p.victim_pods, 2);
  EXPECT_EQ(p.max_victim_priority, 0);
}

TEST(Preemption, GangPreemptorTakesFewestVictimsAndNeverEqualPriority) {
  Fixture f;
  f.bind(0, 0, 8, 0xff);  // job 0: priority 0
  f.bind(1, 1, 2, 0x03);  // job 1..3: priority 0, small, on node 1
  f.bind(2, 1, 2, 0x0c);
  f.bind(3, 1, 2, 0x30);
  f.bind(4, 2, 8, 0xff);  // job 4: priority 3 (equal to the preemptor)
  f.state.commit();
  const std::vector<RunningJob> running = {{0, 0, kNoEstimate, {PodId{0}}},
                                           {1, 0, kNoEstimate, {PodId{1}}},
                                           {2, 0, kNoEstimate, {PodId{2}}},
                                           {3, 0, kNoEstimate, {PodId{3}}},
                                           {4, 3, kNoEstimate, {PodId{4}}}};
  const GangRequest gang{"train", {gpus(8), gpus(8)}, 0};
  const std::vector<PodId> pods = {PodId{8}, PodId{9}};
  const PreemptionPlan p = f.planner.plan(f.state, running, gang, pods, 3);
  ASSERT_TRUE(p.feasible) << p.reason;
  ASSERT_EQ(p.victims.size(), 1u);  // node 3 is free; job 0 frees node 0
  EXPECT_EQ(p.victims[0].job, 0);
  // Nothing below priority 0 helps a priority-0 job.
  const PreemptionPlan none = f.planner.plan(f.state, running, gang, pods, 0);
  EXPECT_FALSE(none.feasible);
  EXPECT_FALSE(none.reason.empty());
}

}  // namespace
}  // namespace gpupack
