#include "execute/defrag_trigger.h"

#include <fmt/format.h>

#include <algorithm>

#include "frag/fgd.h"

namespace gpupack {

TriggerDecision should_defrag(const ClusterState& state, const std::vector<K8sPod>& pods, int64_t now_unix_s,
                              const TriggerOptions& options) {
  TriggerDecision d;
  std::vector<Request> workload;
  for (const K8sPod& p : pods)
    if (!p.terminal() && p.request.is_gpu()) workload.push_back(p.request);
  int64_t capacity_milli = 0;
  for (int n = 0; n < state.node_count(); ++n)
    capacity_milli += int64_t{state.spec(NodeId{n}).gpu_count} * kGpuMilliPerGpu;
  if (!workload.empty() && capacity_milli > 0) {
    const TargetWorkload target = TargetWorkload::from_requests(workload);
    d.frag_pct = 100.0 * cluster_fragmentation_milli(target, state) / static_cast<double>(capacity_milli);
  }
  std::string waiting;
  for (const K8sPod& p : pods) {
    if (!p.node_name.empty() || p.terminal() || p.deleting || p.request.gpu_count < options.large_gpus ||
        !p.request.is_gpu() || p.created_unix_s <= 0)
      continue;
    const int64_t waited = now_unix_s - p.created_unix_s;
    if (waited > d.longest_wait_s) {
      d.longest_wait_s = waited;
      waiting = p.key();
    }
  }
  const bool frag_checked = options.frag_above_pct >= 0, wait_checked = options.wait_bound_s >= 0;
  if (frag_checked && d.frag_pct > options.frag_above_pct) {
    d.fire = true;
    d.why = fmt::format("fragmentation {:.2f}% of GPU capacity is above {:.2f}%", d.frag_pct, options.frag_above_pct);
  } else if (wait_checked && !waiting.empty() && d.longest_wait_s >= options.wait_bound_s) {
    d.fire = true;
    d.why = fmt::format("{} ({}+ GPUs) has waited {} s, the bound is {} s", waiting, options.large_gpus,
                        d.longest_wait_s, options.wait_bound_s);
  } else if (!frag_checked && !wait_checked) {
    d.fire = true;
    d.why = "every round (no threshold given)";
  }
  return d;
}

int RollingBudget::left(int64_t now_unix_s) {
  if (max_moves_ < 0) return -1;
  while (!spent_.empty() && spent_.front().first <= now_unix_s - window_s_) spent_.pop_front();
  int used = 0;
  for (const auto& [when, moves] : spent_) used += moves;
  return std::max(0, max_moves_ - used);
}

void RollingBudget::spend(int64_t now_unix_s, int moves) {
  if (moves > 0) spent_.emplace_back(now_unix_s, moves);
}

}  // namespace gpupack
