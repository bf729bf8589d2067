// Seeded synthetic allocation traces for the allocator model.
//
// training: a training loop. Weights are allocated once; each step draws a
//   batch scale that grows or shrinks every layer's activations, the forward
//   pass allocates per-layer activations (plus a short-lived workspace and a
//   small saved tensor), the backward pass frees them in reverse order while
//   allocating and freeing gradient temporaries; weight gradients and two
//   optimizer states per weight are allocated on the first step and persist.
// inference: continuous-batching text generation. Requests arrive at random,
//   with log-uniform prompt and output lengths; each request keeps one
//   KV-cache tensor per layer group that grows by one token every decode
//   step (allocate the longer tensor, then free the old one, as torch.cat
//   does) and is freed when the request ends; prefill and decode allocate
//   short-lived activations.
// The distributions and constants are documented in docs/ALLOCSIM.md.
//
// Contract: the same (kind, seed, steps) always gives the same trace on every
// platform (own PRNG and distributions, no std:: distributions). Traces are
// finalized (validated, slots assigned). Sizes in bytes, time in µs.
#pragma once

#include <cstdint>
#include <string_view>

#include "alloc/trace_io.h"

namespace gpupack {

Trace generate_training(std::uint64_t seed, std::uint64_t steps);
Trace generate_inference(std::uint64_t seed, std::uint64_t steps);
// kind is "training" or "inference"; throws std::invalid_argument otherwise.
Trace generate_workload(std::string_view kind, std::uint64_t seed, std::uint64_t steps);

}  // namespace gpupack
