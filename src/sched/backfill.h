// EASY backfill: one reservation for the blocked head job, and the rule for
// what may start ahead of it.
//
// Contract:
// - compute_reservation() finds the earliest time the head gang could start
//   if the running jobs ended at their expected end times (start + runtime
//   estimate): it releases them in order of expected end (jobs without an
//   estimate never end, for this purpose) on the live state inside a
//   checkpoint and tries the gang placement after each release time; the
//   first success is the reservation (its start time and the nodes the
//   placement uses). The state is rolled back exactly before returning.
//   `valid` is false when the head cannot start even after every estimated
//   job ends (then nothing is reserved). Cost: O(running) unbinds plus one
//   gang placement per release time at which a freed node could host a member.
// - The backfill rule: with a reservation at time T, a later job may start
//   now on any node if it has an estimate and now + estimate <= T (it ends
//   before the reservation starts); otherwise it may start only on nodes the
//   reservation does not use (allowed_mask). A job without an estimate is
//   therefore never backfilled into the reservation. Either way the reserved
//   placement stays feasible at T, so the head is not delayed (as long as
//   running jobs end by their estimates).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/cluster_state.h"
#include "sched/gang.h"

namespace gpupack {

struct Reservation {
  bool valid = false;
  int32_t job = -1;
  int64_t start_s = 0;                // earliest start by the estimates
  std::vector<Assignment> placement;  // the head's placement at start_s
  std::vector<uint8_t> reserved;      // per node: 1 = used by the placement
  std::vector<uint8_t> allowed_mask;  // per node: 1 = not reserved

  // May a job with this estimate (nullopt = none) start now anywhere?
  bool ends_before(int64_t now_s, std::optional<int64_t> estimate_s) const {
    return !valid || (estimate_s && now_s + *estimate_s <= start_s);
  }
};

Reservation compute_reservation(ClusterState& state, GangPlacer& placer, std::span<const RunningJob> running,
                                int32_t head_job, const GangRequest& head, std::span<const PodId> head_pods,
                                int64_t now_s);

}  // namespace gpupack
