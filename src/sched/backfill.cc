#include "sched/backfill.h"

#include <algorithm>
#include <stdexcept>

#include "sched/filter.h"

namespace gpupack {

Reservation compute_reservation(ClusterState& state, GangPlacer& placer, std::span<const RunningJob> running,
                                int32_t head_job, const GangRequest& head, std::span<const PodId> head_pods,
                                int64_t now_s) {
  Reservation r;
  r.job = head_job;
  std::vector<const RunningJob*> by_end;
  for (const RunningJob& j : running)
    if (j.expected_end_s != kNoEstimate) by_end.push_back(&j);
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const RunningJob* a, const RunningJob* b) { return a->expected_end_s < b->expected_end_s; });

  const ClusterState::Checkpoint mark = state.checkpoint();
  std::vector<NodeId> freed;
  auto try_at = [&](int64_t t) {
    // Only worth a placement search if a freed node can host some member.
    bool useful = false;
    for (NodeId n : freed) {
      for (const Request& m : head.members)
        if (fits(state, n, m)) {
          useful = true;
          break;
        }
      if (useful) break;
    }
    freed.clear();
    if (!useful) return false;
    const GangPlacement p = placer.plan(state, head_pods, head);
    if (!p.placed) return false;
    r.valid = true;
    r.start_s = std::max(t, now_s);
    r.placement = p.assignments;
    return true;
  };
  for (size_t i = 0; i < by_end.size() && !r.valid;) {
    const int64_t t = by_end[i]->expected_end_s;
    for (; i < by_end.size() && by_end[i]->expected_end_s == t; ++i) {
      for (PodId pod : by_end[i]->pods) {
        if (!state.is_bound(pod)) continue;
        freed.push_back(state.assignment(pod).node);
        const Status st = state.unbind(pod);
        if (!st.is_ok()) throw std::logic_error("reservation: unbind failed: " + st.message);
      }
    }
    try_at(t);
  }
  state.rollback(mark);
  if (r.valid) {
    r.reserved.assign(static_cast<size_t>(state.node_count()), 0);
    for (const Assignment& a : r.placement)
      if (valid(a.node)) r.reserved[index(a.node)] = 1;
    r.allowed_mask.resize(r.reserved.size());
    for (size_t i = 0; i < r.reserved.size(); ++i) r.allowed_mask[i] = r.reserved[i] ? 0 : 1;
  }
  return r;
}

}  // namespace gpupack
