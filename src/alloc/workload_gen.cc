#include "alloc/workload_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <vector>

#include "alloc/alloc_config.h"

namespace gpupack {
namespace {

// splitmix64: small, fast and identical everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi].
  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }
  double uniform_real(double lo, double hi) { return lo + (hi - lo) * unit(); }
  // Log-uniform integer in [lo, hi]: as many values per octave.
  std::uint64_t log_uniform(std::uint64_t lo, std::uint64_t hi) {
    const double v = std::exp(uniform_real(std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1.0)));
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(v), lo, hi);
  }
  // Poisson by inversion (small means only).
  std::uint64_t poisson(double mean) {
    const double limit = std::exp(-mean);
    double p = unit();
    std::uint64_t k = 0;
    while (p > limit) {
      p *= unit();
      ++k;
    }
    return k;
  }

 private:
  std::uint64_t state_;
};

class Emitter {
 public:
  std::uint64_t alloc(std::uint64_t bytes, std::int32_t stream = 0) {
    TraceEvent e;
    e.time_us = time_us_++;
    e.action = TraceAction::kAlloc;
    e.id = next_id_++;
    e.size_bytes = std::max<std::uint64_t>(bytes, 1);
    e.stream = stream;
    trace_.events.push_back(e);
    return e.id;
  }
  void free(std::uint64_t id, std::int32_t stream = 0) {
    TraceEvent e;
    e.time_us = time_us_++;
    e.action = TraceAction::kFree;
    e.id = id;
    e.stream = stream;
    trace_.events.push_back(e);
  }
  void advance_to(std::int64_t time_us) { time_us_ = std::max(time_us_, time_us); }
  Trace finish(const char* name) {
    finalize_trace(trace_, name);
    return std::move(trace_);
  }

 private:
  Trace trace_;
  std::uint64_t next_id_ = 1;
  std::int64_t time_us_ = 0;
};

// Tensor sizes are multiples of 256 bytes, like most real tensors.
std::uint64_t align256(double bytes) {
  return std::max<std::uint64_t>(256, static_cast<std::uint64_t>(bytes) / 256 * 256);
}

}  // namespace

Trace generate_training(std::uint64_t seed, std::uint64_t steps) {
  constexpr int kLayers = 24;
  Rng rng(seed);
  Emitter out;
  std::vector<std::uint64_t> weight_bytes(kLayers), act_bytes(kLayers), saved_bytes(kLayers);
  std::vector<std::uint64_t> weights(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    weight_bytes[l] = align256(static_cast<double>(rng.uniform(2 * kMiB, 48 * kMiB)));
    act_bytes[l] = align256(static_cast<double>(rng.uniform(8 * kMiB, 96 * kMiB)));
    saved_bytes[l] = align256(static_cast<double>(rng.uniform(1024, 512 * 1024)));
    weights[l] = out.alloc(weight_bytes[l]);
  }
  std::vector<std::uint64_t> grads, states;
  for (std::uint64_t step = 0; step < steps; ++step) {
    out.advance_to(static_cast<std::int64_t>(step) * 1'000'000);
    // Variable batch / sequence length: activations grow or shrink together.
    const double scale = rng.uniform_real(0.5, 1.5);
    std::vector<std::uint64_t> acts(kLayers), saved(kLayers);
    std::vector<std::uint64_t> act_size(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      act_size[l] = align256(static_cast<double>(act_bytes[l]) * scale);
      acts[l] = out.alloc(act_size[l]);
      saved[l] = out.alloc(saved_bytes[l]);
      const std::uint64_t ws = out.alloc(align256(static_cast<double>(rng.uniform(kMiB / 2, 8 * kMiB)) * scale));
      out.free(ws);
    }
    const std::uint64_t loss = out.alloc(4);
    // Backward: gradient w.r.t. each activation, freed after the layer below.
    std::uint64_t grad_out = out.alloc(act_size[kLayers - 1]);
    out.free(loss);
    for (int l = kLayers - 1; l >= 0; --l) {
      if (step == 0) grads.push_back(out.alloc(weight_bytes[l]));
      const std::uint64_t grad_in = l > 0 ? out.alloc(act_size[l - 1]) : 0;
      out.free(saved[l]);
      out.free(acts[l]);
      out.free(grad_out);
      grad_out = grad_in;
    }
    // Optimizer: two persistent states per weight, one temporary per weight.
    for (int l = 0; l < kLayers; ++l) {
      if (step == 0) {
        states.push_back(out.alloc(weight_bytes[l]));
        states.push_back(out.alloc(weight_bytes[l]));
      }
      out.free(out.alloc(weight_bytes[l]));
    }
  }
  return out.finish("generated training trace");
}

Trace generate_inference(std::uint64_t seed, std::uint64_t steps) {
  constexpr int kLayers = 16;
  constexpr int kGroups = 4;                             // KV tensors per request
  constexpr std::uint64_t kKvBytesPerToken = 32 * 1024;  // per group
  constexpr std::uint64_t kActBytesPerToken = 16 * 1024;
  constexpr std::uint64_t kLogitsBytes = 32000 * 4;  // vocabulary x fp32
  constexpr std::size_t kMaxBatch = 16;
  constexpr double kArrivalsPerStep = 0.25;
  Rng rng(seed);
  Emitter out;
  for (int l = 0; l < kLayers; ++l) out.alloc(align256(static_cast<double>(rng.uniform(16 * kMiB, 64 * kMiB))));

  struct Request {
    std::uint64_t tokens = 0;
    std::uint64_t remaining = 0;
    std::uint64_t kv[kGroups] = {};
  };
  std::vector<Request> active;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> queue;  // (prompt, output) lengths
  for (std::uint64_t step = 0; step < steps; ++step) {
    out.advance_to(static_cast<std::int64_t>(step) * 20'000);
    for (std::uint64_t k = rng.poisson(kArrivalsPerStep); k > 0; --k) {
      queue.emplace_back(rng.log_uniform(16, 4096), rng.log_uniform(16, 1024));
    }
    // Prefill newly admitted requests one by one.
    while (!queue.empty() && active.size() < kMaxBatch) {
      auto [prompt, output] = queue.front();
      queue.pop_front();
      Request r;
      r.tokens = prompt;
      r.remaining = output;
      const std::uint64_t a = out.alloc(prompt * kActBytesPerToken);
      const std::uint64_t b = out.alloc(prompt * kActBytesPerToken * 4);  // MLP intermediate
      for (auto& kv : r.kv) kv = out.alloc(prompt * kKvBytesPerToken);
      out.free(b);
      out.free(a);
      active.push_back(r);
    }
    if (active.empty()) continue;
    // One decode step for the whole batch.
    const std::uint64_t batch = active.size();
    const std::uint64_t hidden = out.alloc(batch * kActBytesPerToken);
    for (Request& r : active) {
      const std::uint64_t scores = out.alloc(align256(static_cast<double>(r.tokens) * 64.0));  // attention scores
      for (auto& kv : r.kv) {
        const std::uint64_t grown = out.alloc((r.tokens + 1) * kKvBytesPerToken);
        out.free(kv);
        kv = grown;
      }
      out.free(scores);
      ++r.tokens;
      --r.remaining;
    }
    const std::uint64_t logits = out.alloc(batch * kLogitsBytes);
    out.free(logits);
    out.free(hidden);
    // Finished requests release their caches.
    for (auto it = active.begin(); it != active.end();) {
      if (it->remaining == 0) {
        for (auto kv : it->kv) out.free(kv);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out.finish("generated inference trace");
}

Trace generate_workload(std::string_view kind, std::uint64_t seed, std::uint64_t steps) {
  if (kind == "training") return generate_training(seed, steps);
  if (kind == "inference") return generate_inference(seed, steps);
  throw std::invalid_argument(fmt::format("--generate: '{}' is not training or inference", kind));
}

}  // namespace gpupack
