// When periodic defragmentation (`gpupack defrag --every ...`) plans, and
// how many moves it may still make.
//
// Contract:
// - should_defrag(): fires when the cluster's FGD fragmentation (share of
//   GPU capacity, against the workload of the pods there) is above
//   `frag_above_pct` (< 0: not checked), or when a pending pod asking for at
//   least `large_gpus` GPUs has waited (since its creationTimestamp) at
//   least `wait_bound_s` (< 0: not checked). `why` says which, with the
//   figure; "" when it does not fire. With neither check given it always
//   fires. Pure.
// - RollingBudget: at most `max_moves` moves in any `window_s` seconds
//   (max_moves < 0: unlimited); left(now) is what remains now, spend()
//   records moves made at `now`.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "io/kubectl.h"
#include "model/cluster_state.h"

namespace gpupack {

struct TriggerOptions {
  double frag_above_pct = -1;
  int64_t wait_bound_s = -1;
  int large_gpus = 1;
};

struct TriggerDecision {
  bool fire = false;
  std::string why;
  double frag_pct = 0;
  int64_t longest_wait_s = 0;  // of the large pending pods
};

TriggerDecision should_defrag(const ClusterState& state, const std::vector<K8sPod>& pods, int64_t now_unix_s,
                              const TriggerOptions& options);

class RollingBudget {
 public:
  RollingBudget(int max_moves, int64_t window_s) : max_moves_(max_moves), window_s_(window_s) {}
  int left(int64_t now_unix_s);
  void spend(int64_t now_unix_s, int moves);

 private:
  int max_moves_;
  int64_t window_s_;
  std::deque<std::pair<int64_t, int>> spent_;  // (when, moves), oldest first
};

}  // namespace gpupack
