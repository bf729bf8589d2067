#include "sim/dynamic_sim.h"

#include <gtest/gtest.h>

#include "../sched/sched_fixture.h"
#include "policy/registry.h"

namespace gpupack {
namespace {

using testing::gpus;
using testing::model;
using testing::uniform_nodes;

DynamicJob job(const std::string& name, int64_t submit, int members, int gpus_each, int64_t runtime,
               std::optional<int64_t> estimate, int priority = 0, ModelMask models = 0) {
  DynamicJob j;
  j.name = name;
  j.submit_s = submit;
  Request r = gpus(gpus_each);
  r.allowed_models = models;
  j.members.assign(static_cast<size_t>(members), r);
  j.runtime_s = runtime;
  j.estimate_s = estimate;
  j.priority = priority;
  return j;
}

DynamicRunResult simulate(const std::vector<NodeSpec>& nodes, const DynamicWorkload& w, DynamicOptions o,
                          const char* policy_name = "bestfit") {
  std::vector<Request> all;
  for (const auto& j : w.jobs) all.insert(all.end(), j.members.begin(), j.members.end());
  auto target = std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(all));
  auto policy = make_policy(policy_name, {42, target});
  return run_dynamic(nodes, w, *policy, {}, *target, o);
}

TEST(DynamicSim, TwoSixtyPercentGangsOneRunsTheOtherWaits) {
  // Ten one-GPU nodes, two gangs of six arriving at the same instant.
  DynamicWorkload w;
  w.jobs = {job("a", 0, 6, 1, 100, 100), job("b", 0, 6, 1, 100, 100)};
  const DynamicRunResult r = simulate(uniform_nodes(10, 1), w, {});
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].start_s, 0);
  EXPECT_EQ(r.jobs[1].start_s, 100);  // waits whole, then runs whole
  EXPECT_EQ(r.never_ran, 0);
  for (const DynamicSample& s : r.samples) {
    EXPECT_EQ(s.used_milli % 6000, 0) << "a gang is partly bound at t=" << s.time_s;
    EXPECT_LE(s.used_milli, 6000);
  }
  EXPECT_EQ(r.samples.front().queue_length, 1);
}

// Nodes 0-3 are V100M32, node 4 is T4; every job but T wants V100M32.
struct BackfillCase {
  std::vector<NodeSpec> nodes;
  DynamicWorkload w;
  BackfillCase() {
    nodes = uniform_nodes(4, 8);
    nodes.push_back({"t4", 64000, 524288, 8, model("T4")});
    const ModelMask v100 = model_bit(model("V100M32"));
    w.jobs = {job("A", 0, 2, 8, 100, 100, 0, v100),      job("B", 0, 1, 8, 1000, 1000, 0, v100),
              job("H", 1, 3, 8, 100, 100, 0, v100),      job("S1", 2, 1, 8, 50, 50, 0, v100),
              job("S2", 3, 1, 8, 500, 500, 0, v100),     job("S3", 4, 1, 8, 10, std::nullopt, 0, v100),
              job("T", 5, 1, 8, 500, std::nullopt, 0, 0)};
  }
};
enum { kA, kB, kH, kS1, kS2, kS3, kT };

// GPU milli-seconds allocated over [0, until).
double allocated_until(const DynamicRunResult& r, int64_t until) {
  double area = 0;
  for (size_t i = 0; i + 1 < r.samples.size() && r.samples[i].time_s < until; ++i)
    area += static_cast<double>(r.samples[i].used_milli) *
            static_cast<double>(std::min(until, r.samples[i + 1].time_s) - r.samples[i].time_s);
  return area;
}

TEST(DynamicSim, EasyBackfillBeatsStrictFifoWithoutDelayingTheReservation) {
  BackfillCase c;
  DynamicOptions fifo, easy;
  fifo.mode = QueueMode::kStrictFifo;
  easy.mode = QueueMode::kBackfill;
  const DynamicRunResult f = simulate(c.nodes, c.w, fifo);
  const DynamicRunResult b = simulate(c.nodes, c.w, easy);
  // The head gang H is reserved from t=100 (when A ends) and starts then.
  ASSERT_EQ(b.jobs[kH].reservations > 0, true);
  EXPECT_EQ(b.jobs[kH].reserved_start_s, 100);
  EXPECT_LE(b.jobs[kH].start_s, b.jobs[kH].reserved_start_s);
  EXPECT_EQ(f.jobs[kH].start_s, 100);
  // S1 ends (by its estimate) before the reservation: backfilled at once.
  EXPECT_EQ(b.jobs[kS1].start_s, 2);
  EXPECT_TRUE(b.jobs[kS1].backfilled);
  // T has no estimate but only fits where the reservation needs nothing.
  EXPECT_EQ(b.jobs[kT].start_s, 5);
  // S2 would end after the reservation and S3 gives no estimate: both wait
  // although a reserved node is free.
  EXPECT_GE(b.jobs[kS2].start_s, 100);
  EXPECT_GE(b.jobs[kS3].start_s, 100);
  EXPECT_FALSE(b.jobs[kS3].backfilled);
  // Strict FIFO starts nothing behind H before H.
  for (int j : {kS1, kS2, kS3, kT}) EXPECT_GE(f.jobs[j].start_s, f.jobs[kH].start_s);
  // Utilisation while the gang waits for its reservation (both runs end at
  // t=1000 with the same work, so the whole-run means are equal).
  EXPECT_GT(allocated_until(b, 100), allocated_until(f, 100));
  EXPECT_GT(allocated_until(b, 200), allocated_until(f, 200));
  EXPECT_GE(b.mean_alloc_pct, f.mean_alloc_pct);
  EXPECT_EQ(b.backfilled_jobs, 2);
}

TEST(DynamicSim, WithoutBackfillALongJobDelaysTheGang) {
  BackfillCase c;
  const DynamicRunResult n = simulate(c.nodes, c.w, {});  // no blocking, no reservation
  EXPECT_GT(n.jobs[kH].start_s, 100);
}

TEST(DynamicSim, PreemptionEvictsAGangWholeAndRequeuesIt) {
  DynamicWorkload w;
  w.jobs = {job("gang", 0, 2, 8, 1000, 1000, 0), job("urgent", 10, 1, 8, 10, 10, 5)};
  DynamicOptions o;
  const DynamicRunResult off = simulate(uniform_nodes(2, 8), w, o);
  EXPECT_EQ(off.jobs[1].start_s, 1000);
  o.preemption = true;
  const DynamicRunResult on = simulate(uniform_nodes(2, 8), w, o);
  EXPECT_EQ(on.preemptions, 1);
  EXPECT_EQ(on.evicted_pods, 2);
  EXPECT_EQ(on.jobs[1].start_s, 10);
  EXPECT_EQ(on.jobs[0].evictions, 1);
  EXPECT_EQ(on.jobs[0].first_start_s, 0);
  EXPECT_EQ(on.jobs[0].start_s, 20);  // restarted whole once the urgent job left
  EXPECT_EQ(on.jobs[0].end_s, 1020);
  for (const DynamicSample& s : on.samples) {
    if (s.time_s == 10) {
      EXPECT_EQ(s.used_milli, 8000);  // the urgent pod only: no gang member left behind
    }
  }
}

TEST(DynamicSim, QuotaHoldsBackOnlyItsQueue) {
  DynamicWorkload w;
  w.jobs = {job("a1", 0, 1, 4, 100, 100), job("a2", 0, 1, 4, 100, 100), job("b1", 0, 1, 4, 100, 100)};
  w.jobs[0].queue = w.jobs[1].queue = "team-a";
  DynamicOptions o;
  o.quota_gpu_milli["team-a"] = 4000;
  const DynamicRunResult r = simulate(uniform_nodes(2, 8), w, o);
  EXPECT_EQ(r.jobs[0].start_s, 0);
  EXPECT_EQ(r.jobs[1].start_s, 100);
  EXPECT_EQ(r.jobs[2].start_s, 0);
}

TEST(DynamicSim, GeneratedGangWorkloadRunsWithInvariantsAndRackPreference) {
  GangWorkloadOptions g;
  g.jobs = 300;
  g.seed = 7;
  const DynamicWorkload w = generate_gang_workload(g);
  const GangCluster c = gang_cluster(32, 8, 8);
  int no_estimate = 0;
  for (const auto& j : w.jobs) {
    no_estimate += !j.estimate_s;
    if (j.estimate_s) {
      EXPECT_GE(*j.estimate_s, j.runtime_s);
    }
  }
  EXPECT_GT(no_estimate, 0);
  EXPECT_LT(no_estimate, 300);
  for (QueueMode mode : {QueueMode::kNoBlocking, QueueMode::kBackfill, QueueMode::kStrictFifo}) {
    DynamicOptions o;
    o.mode = mode;
    o.preemption = mode == QueueMode::kNoBlocking;
    o.levels = {{"rack", c.rack_of_node}};
    const DynamicRunResult r = simulate(c.nodes, w, o, "fgd");  // run_dynamic checks invariants at the end
    EXPECT_EQ(r.never_ran, 0);
    for (const DynamicSample& s : r.samples) EXPECT_LE(s.used_milli, r.capacity_milli);
    for (const JobOutcome& j : r.jobs) EXPECT_GE(j.start_s, j.submit_s);
  }
}

TEST(DynamicSim, GeneratedShapesWithSharedGpusScaleCpuAndMemoryByShare) {
  GangWorkloadOptions g;
  g.jobs = 200;
  g.shapes = {{1, 1, 1.0, 250}, {2, 8, 1.0}};
  const DynamicWorkload w = generate_gang_workload(g);
  int shared = 0;
  for (const auto& j : w.jobs) {
    const Request& m = j.members.front();
    if (m.gpu_milli == 250) {
      ++shared;
      EXPECT_EQ(j.members.size(), 1u);
      EXPECT_EQ(m.gpu_count, 1);
      EXPECT_EQ(m.cpu_milli, g.cpu_milli_per_gpu / 4);
      EXPECT_EQ(m.memory_mib, g.memory_mib_per_gpu / 4);
    } else {
      EXPECT_EQ(m.gpu_milli, kGpuMilliPerGpu);
      EXPECT_EQ(m.cpu_milli, g.cpu_milli_per_gpu * 8);
    }
  }
  EXPECT_GT(shared, 50);
  EXPECT_LT(shared, 150);
  g.shapes = {{1, 2, 1.0, 500}};  // a share below a whole GPU needs one GPU per member
  EXPECT_THROW(generate_gang_workload(g), std::invalid_argument);
}

}  // namespace
}  // namespace gpupack

namespace gpupack {
namespace {

// Spread scatters four half-GPU pods over four GPUs; a whole-GPU job then
// cannot start until the periodic defragmentation consolidates them.
TEST(DynamicSimDefrag, PeriodicPlannerFreesWholeGpusForQueuedJobs) {
  const std::vector<NodeSpec> nodes = uniform_nodes(2, 2);
  DynamicWorkload w;
  for (int i = 0; i < 4; ++i) {
    DynamicJob j;
    j.name = "half-" + std::to_string(i);
    j.submit_s = i;
    Request r = gpus(1);
    r.gpu_milli = 500;
    j.members = {r};
    j.runtime_s = 100000;
    w.jobs.push_back(j);
  }
  w.jobs.push_back(job("whole", 10, 1, 1, 100, 100));
  w.jobs.push_back(job("gang", 11, 2, 1, 100, 100));

  DynamicOptions off;
  const DynamicRunResult without = simulate(nodes, w, off, "spread");
  EXPECT_EQ(without.defrag_moves, 0);
  EXPECT_GE(without.jobs[4].start_s - without.jobs[4].submit_s, 100000 - 10);  // waits for a half pod to end

  DynamicOptions on;
  on.defrag_every_s = 60;
  on.defrag_budget_fraction = 0.5;  // up to 2 of the 4 running pods
  const DynamicRunResult with = simulate(nodes, w, on, "spread");
  EXPECT_GE(with.defrag_runs, 1);
  EXPECT_GE(with.defrag_moves, 1);
  EXPECT_LE(with.defrag_moves, 2 * with.defrag_runs);
  EXPECT_LT(with.jobs[4].start_s, 1000);  // started after the first planner run
  EXPECT_EQ(with.never_ran, 0);
}

// Spread puts four one-GPU jobs on four 2-GPU nodes; a gang of two 2-GPU
// members then has the four free GPUs it needs, but no whole node. With
// room-triggered defragmentation two of the single pods join the others and
// the gang starts when it arrives; without, it waits for a departure.
TEST(DynamicSimDefrag, RoomTriggerDrainsNodesForAWaitingGang) {
  const std::vector<NodeSpec> nodes = uniform_nodes(4, 2);
  DynamicWorkload w;
  for (int i = 0; i < 4; ++i) w.jobs.push_back(job("single-" + std::to_string(i), i, 1, 1, 100000, 100000));
  w.jobs.push_back(job("gang", 10, 2, 2, 100, 100));

  DynamicOptions off;
  const DynamicRunResult without = simulate(nodes, w, off, "spread");
  EXPECT_EQ(without.defrag_runs, 0);
  EXPECT_GE(without.jobs[4].start_s - without.jobs[4].submit_s, 100000 - 10);

  DynamicOptions on;
  on.defrag_on_room = true;
  on.defrag_budget_fraction = 0.5;  // 2 of the 4 running pods
  const DynamicRunResult with = simulate(nodes, w, on, "spread");
  EXPECT_EQ(with.jobs[4].start_s, 10);
  EXPECT_EQ(with.defrag_moves, 2);
  EXPECT_EQ(with.never_ran, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(with.jobs[static_cast<size_t>(i)].start_s, i);  // moved, not restarted

  // One move may not free a whole node pair: nothing moves, the gang waits.
  on.defrag_budget_fraction = 0.25;
  const DynamicRunResult short_budget = simulate(nodes, w, on, "spread");
  EXPECT_EQ(short_budget.defrag_moves, 0);
  EXPECT_GE(short_budget.jobs[4].start_s - short_budget.jobs[4].submit_s, 100000 - 10);
}

}  // namespace
}  // namespace gpupack
