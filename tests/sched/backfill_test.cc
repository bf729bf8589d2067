#include "sched/backfill.h"

#include <gtest/gtest.h>

#include "policy/registry.h"
#include "sched_fixture.h"

namespace gpupack {
namespace {

using testing::gpus;
using testing::uniform_nodes;

// Nodes 0 and 1 run jobs ending at 100 and 200 (estimates), nodes 2 and 3 a
// job without an estimate. The head gang needs two whole nodes.
TEST(Reservation, EarliestStartFromExpectedEndsAndTheNodesItNeeds) {
  ClusterState s(uniform_nodes(4, 8));
  auto policy = make_policy("bestfit", {});
  Scheduler sched(*policy);
  GangPlacer placer(sched, s.node_count());
  ASSERT_TRUE(s.bind(PodId{0}, gpus(8), {NodeId{0}, 0xff, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, gpus(8), {NodeId{1}, 0xff, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{2}, gpus(8), {NodeId{2}, 0xff, 1000}).is_ok());
  ASSERT_TRUE(s.bind(PodId{3}, gpus(8), {NodeId{3}, 0xff, 1000}).is_ok());
  s.commit();
  const std::vector<RunningJob> running = {
      {0, 0, 100, {PodId{0}}}, {1, 0, 200, {PodId{1}}}, {2, 0, kNoEstimate, {PodId{2}, PodId{3}}}};
  const GangRequest head{"head", {gpus(8), gpus(8)}, 0};
  const std::vector<PodId> head_pods = {PodId{10}, PodId{11}};
  const Reservation r = compute_reservation(s, placer, running, 7, head, head_pods, 5);
  ASSERT_TRUE(r.valid);
  EXPECT_EQ(r.job, 7);
  EXPECT_EQ(r.start_s, 200);
  EXPECT_EQ(r.reserved, (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(r.allowed_mask, (std::vector<uint8_t>{0, 0, 1, 1}));
  // The state is exactly as before.
  EXPECT_EQ(s.bound_pod_count(), 4);
  EXPECT_FALSE(s.is_bound(PodId{10}));
  EXPECT_TRUE(s.check_invariants().empty());
  // The backfill rule.
  EXPECT_TRUE(r.ends_before(5, 195));
  EXPECT_FALSE(r.ends_before(5, 196));
  EXPECT_FALSE(r.ends_before(5, std::nullopt));  // no estimate: never into the reservation

  // Needing three nodes, the head cannot start before the unestimated job
  // ends, which is never: no reservation.
  const GangRequest huge{"huge", {gpus(8), gpus(8), gpus(8)}, 0};
  const std::vector<PodId> huge_pods = {PodId{10}, PodId{11}, PodId{12}};
  EXPECT_FALSE(compute_reservation(s, placer, running, 8, huge, huge_pods, 5).valid);
}

}  // namespace
}  // namespace gpupack
