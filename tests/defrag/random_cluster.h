// Test support: small clusters by hand (nodes(), shared(), whole()) and
// small random clusters packed full of shared and whole-GPU pods, with
// pending pods that do not fit and random move metadata.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "defrag/budget.h"
#include "defrag/goal.h"
#include "model/cluster_state.h"
#include "policy/gpu_choice.h"
#include "sched/filter.h"
#include "sim/random.h"

namespace gpupack::testing {

// `count` nodes n0, n1, ... of `gpus` GPUs, `cpu_milli` CPU and 64 GiB.
inline std::vector<NodeSpec> nodes(int count, int gpus, int64_t cpu_milli = 32000) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < count; ++i) out.push_back({"n" + std::to_string(i), cpu_milli, 65536, gpus, 0});
  return out;
}
inline Request shared(int32_t milli, int64_t cpu = 1000) { return Request{cpu, 1024, 1, milli, 0}; }
inline Request whole(int32_t gpus, int64_t cpu = 1000) { return Request{cpu, 1024, gpus, 1000, 0}; }

// Two two-GPU nodes of 4 cores. n0: A (pod 0, 500 milli, 3 cores) on GPU 0,
// GPU 1 free, 1 core free. n1: B (pod 1, 450, 1 core) and an immovable 450
// (half a core) on GPU 0, an immovable whole GPU (half a core) on GPU 1.
// Pending P (pod 4, a whole GPU, 2 cores) has its GPU on n0 but not the
// cores; A fits nowhere as it is. A and B trading GPUs frees 2 cores there.
struct CpuShort {
  ClusterState state{nodes(2, 2, 4000)};
  PodMoveInfos infos = PodMoveInfos(5);
  DefragGoal goal;
  CpuShort() {
    bind(0, shared(500, 3000), 0, 1u, 500);
    bind(1, shared(450), 1, 1u, 450);
    bind(2, shared(450, 500), 1, 1u, 450);
    bind(3, shared(1000, 500), 1, 2u, 1000);
    state.commit();
    infos[2].immovable = true;
    infos[3].immovable = true;
    goal.pending = {{PodId{4}, whole(1, 2000)}};
  }
  void bind(int32_t pod, const Request& r, int node, uint32_t mask, int32_t milli) {
    if (!state.bind(PodId{pod}, r, Assignment{NodeId{node}, mask, milli}).is_ok())
      throw std::logic_error("CpuShort: bind failed");
  }
};

struct RandomCluster {
  ClusterState state;
  PodMoveInfos infos;
  std::vector<PendingPod> pending;
};

inline Request random_request(Rng& rng, int max_gpus) {
  Request r;
  r.cpu_milli = 1000 * static_cast<int64_t>(1 + rng.below(8));
  r.memory_mib = 1024 * static_cast<int64_t>(1 + rng.below(8));
  const uint64_t kind = rng.below(10);
  if (kind < 6) {
    r.gpu_count = 1;
    static const int32_t shares[] = {100, 250, 300, 500, 500, 700};
    r.gpu_milli = shares[rng.below(6)];
  } else if (kind < 9) {
    r.gpu_count = 1 + static_cast<int32_t>(rng.below(std::min(2, max_gpus)));
    r.gpu_milli = 1000;
  }
  return r;
}

// `nodes` nodes of `gpus` GPUs; pods bound first fit (random GPUs among the
// fitting ones) until `attempts` draws are spent; then `pending` requests that
// fit nowhere now but would fit on an empty node.
inline RandomCluster make_random_cluster(uint64_t seed, int nodes, int gpus, int attempts, int pending,
                                         bool random_infos, int64_t node_cpu_milli = 32000) {
  Rng rng(seed);
  std::vector<NodeSpec> specs;
  for (int i = 0; i < nodes; ++i) specs.push_back({"node-" + std::to_string(i), node_cpu_milli, 128 * 1024, gpus, 0});
  RandomCluster c{ClusterState(specs), {}, {}};
  int next = 0;
  for (int a = 0; a < attempts; ++a) {
    const Request r = random_request(rng, gpus);
    std::vector<int> fit;
    for (int n = 0; n < nodes; ++n)
      if (fits(c.state, NodeId{n}, r)) fit.push_back(n);
    if (fit.empty()) continue;
    const NodeId n{fit[rng.below(fit.size())]};
    uint32_t mask = 0;
    if (r.is_gpu()) {
      // a random fitting GPU set: start from a random index
      const auto free = c.state.gpu_free_milli(n);
      const int start = static_cast<int>(rng.below(gpus));
      int taken = 0;
      for (int k = 0; k < gpus && taken < r.gpu_count; ++k) {
        const int g = (start + k) % gpus;
        if (free[g] >= r.gpu_milli) mask |= 1u << g, ++taken;
      }
    }
    c.state.bind(PodId{next++}, r, Assignment{n, mask, r.is_gpu() ? r.gpu_milli : 0});
  }
  c.state.commit();
  c.infos.resize(next + pending);
  for (int p = 0; p < next; ++p) {
    if (!random_infos) continue;
    PodMoveInfo& info = c.infos[p];
    info.immovable = rng.below(8) == 0;
    info.checkpointable = rng.below(2) == 0;
    info.restart_cost = 0.5 + static_cast<double>(rng.below(4)) * 0.5;
    if (rng.below(3) == 0) info.group = "group-" + std::to_string(rng.below(3));
  }
  for (int tries = 0; static_cast<int>(c.pending.size()) < pending && tries < 1000; ++tries) {
    Request r = random_request(rng, gpus);
    if (!r.is_gpu()) continue;
    bool fits_now = false;
    for (int n = 0; n < nodes; ++n) fits_now = fits_now || fits(c.state, NodeId{n}, r);
    if (fits_now) continue;
    c.pending.push_back({PodId{next + static_cast<int>(c.pending.size())}, r});
  }
  return c;
}

}  // namespace gpupack::testing
