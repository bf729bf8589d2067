#include "policy/gpu_choice.h"

namespace gpupack {
namespace {

// Picks req.gpu_count fitting GPUs, repeatedly taking the one that `better`
// prefers (strictly), so ties keep the lowest index.
template <typename Better>
uint32_t choose(std::span<const int32_t> free, const Request& req, Better better) {
  if (req.gpu_count <= 0) return 0;
  uint32_t mask = 0;
  for (int k = 0; k < req.gpu_count; ++k) {
    int pick = -1;
    for (int g = 0; g < static_cast<int>(free.size()); ++g) {
      if ((mask >> g) & 1u) continue;
      if (free[g] < req.gpu_milli) continue;
      if (pick < 0 || better(free[g], free[pick])) pick = g;
    }
    if (pick < 0) return 0;
    mask |= 1u << pick;
  }
  return mask;
}

}  // namespace

uint32_t choose_gpus_best_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t a, int32_t b) { return a < b; });
}

uint32_t choose_gpus_first_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t, int32_t) { return false; });
}

uint32_t choose_gpus_worst_fit(std::span<const int32_t> free, const Request& req) {
  return choose(free, req, [](int32_t a, int32_t b) { return a > b; });
}

}  // namespace gpupack
