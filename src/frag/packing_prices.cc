#include "frag/packing_prices.h"

#include <glpk.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "model/cluster_state.h"

namespace gpupack {
namespace {

constexpr int kMilli = kGpuMilliPerGpu;
constexpr double kTolerance = 1e-9;
constexpr int kMaxRows = 100000;  // far above what any target needs; a safeguard
// With more sizes than this the cutting planes (a knapsack over the sizes
// each, and as many rounds as the LP needs) take seconds (999 sizes: 14 s), so the LP runs
// on the sizes rounded down to multiples of kSizeGrid (packing_prices.h).
constexpr size_t kMaxExactSizes = 100;
constexpr int32_t kSizeGrid = 10;
int32_t grid_size(int32_t size) { return size < kSizeGrid ? size : size - size % kSizeGrid; }

// K(x) for x = 0..1000 over (size, price) items and, for the cutting
// planes, the GPU patterns (counts per item index) worth more than one GPU:
// for each item i, i plus a most valuable filling of the 1000 - size_i left.
struct Knapsack {
  std::vector<double> value;
  std::vector<std::vector<int>> violated;  // distinct, in item order
};

Knapsack knapsack(const std::vector<int32_t>& sizes, const std::vector<double>& price) {
  Knapsack k;
  k.value.assign(kMilli + 1, 0.0);
  std::vector<int> last(kMilli + 1, -1);  // the item that set value[x], or -1 (value[x - 1] carried)
  for (int x = 1; x <= kMilli; ++x) {
    k.value[x] = k.value[x - 1];
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] > x) break;
      const double v = k.value[x - sizes[i]] + price[i];
      if (v > k.value[x] + kTolerance) {
        k.value[x] = v;
        last[x] = static_cast<int>(i);
      }
    }
  }
  const auto filling = [&](int x, std::vector<int>& counts) {
    while (x > 0) {
      if (last[x] < 0) {
        --x;
        continue;
      }
      ++counts[static_cast<size_t>(last[x])];
      x -= sizes[static_cast<size_t>(last[x])];
    }
  };
  std::set<std::vector<int>> seen;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int rest = kMilli - sizes[i];
    if (k.value[rest] + price[i] <= 1.0 + kTolerance) continue;
    std::vector<int> counts(sizes.size(), 0);
    ++counts[i];
    filling(rest, counts);
    if (seen.insert(counts).second) k.violated.push_back(std::move(counts));
  }
  return k;
}

// GLPK keeps an environment per thread and frees it only on glp_free_env();
// a worker thread that solved prices would leak it when it exits. This frees
// it at the exit of every thread that solved prices (by then the thread's
// GLPK objects are gone: each solve deletes its problem before returning).
struct GlpkEnvRelease {
  ~GlpkEnvRelease() { glp_free_env(); }
};

}  // namespace

PackingPrices::PackingPrices() : price_of_(kMilli + 1, 0.0), gap_value_(kMilli + 1, 0.0) {}

namespace {
std::vector<std::pair<int32_t, double>> target_items(const TargetWorkload& target) {
  std::vector<std::pair<int32_t, double>> out;
  for (const TargetClass& m : target.classes) {
    if (m.gpu_count <= 0 || m.gpu_milli <= 0 || m.count <= 0) continue;
    out.emplace_back(std::min(m.gpu_milli, kMilli), static_cast<double>(m.count) * m.gpu_count);
  }
  return out;
}
}  // namespace

PackingPrices::PackingPrices(const TargetWorkload& target) : PackingPrices(target_items(target)) {}

PackingPrices::PackingPrices(const std::vector<std::pair<int32_t, double>>& list) : PackingPrices() {
  std::map<int32_t, double> items;  // size -> items
  for (const auto& [size, n] : list) {
    if (size <= 0 || size > kMilli || !(n > 0)) continue;
    items[size] += n;
  }
  if (items.empty()) return;
  std::vector<int32_t> exact_sizes;  // priced by their rounded size (many sizes only)
  if (items.size() > kMaxExactSizes) {
    std::map<int32_t, double> coarse;
    for (const auto& [size, n] : items) {
      exact_sizes.push_back(size);
      coarse[grid_size(size)] += n;
    }
    items = std::move(coarse);
  }
  std::vector<int32_t> sizes;
  std::vector<double> demand;
  for (const auto& [size, n] : items) {
    sizes.push_back(size);
    demand.push_back(n);
  }
  const int cols = static_cast<int>(sizes.size());
  static thread_local GlpkEnvRelease release_at_thread_exit;
  (void)release_at_thread_exit;

  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  glp_add_cols(lp, cols);
  for (int j = 1; j <= cols; ++j) {
    glp_set_col_bnds(lp, j, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, j, demand[static_cast<size_t>(j - 1)]);
  }
  auto add_row = [&](const std::vector<int>& counts) {
    std::vector<int> idx{0};
    std::vector<double> val{0.0};
    for (int j = 1; j <= cols; ++j)
      if (counts[static_cast<size_t>(j - 1)] > 0) {
        idx.push_back(j);
        val.push_back(counts[static_cast<size_t>(j - 1)]);
      }
    const int row = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, row, GLP_UP, 0.0, 1.0);
    glp_set_mat_row(lp, row, static_cast<int>(idx.size()) - 1, idx.data(), val.data());
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int> counts(sizes.size(), 0);
    counts[i] = kMilli / sizes[i];
    add_row(counts);
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.meth = GLP_DUALP;
  std::vector<double> price(sizes.size(), 0.0);
  Knapsack k;
  for (;;) {
    const int rc = glp_simplex(lp, &parm);
    if (rc != 0 || glp_get_status(lp) != GLP_OPT) {
      glp_delete_prob(lp);
      throw std::runtime_error("packing prices: the fluid packing LP did not solve (GLPK status " + std::to_string(rc) +
                               ")");
    }
    for (int j = 1; j <= cols; ++j) price[static_cast<size_t>(j - 1)] = glp_get_col_prim(lp, j);
    k = knapsack(sizes, price);
    if (k.value[kMilli] <= 1.0 + kTolerance || k.violated.empty() || rows_added_ >= kMaxRows) break;
    // Every violated pattern at once: fewer rounds of knapsack and simplex
    // (the dual simplex, whose basis stays dual feasible as cuts are added).
    for (const std::vector<int>& counts : k.violated) add_row(counts);
    rows_added_ += static_cast<int>(k.violated.size());
  }
  glp_delete_prob(lp);

  // Feasible whatever the stop: no pattern worth more than one GPU.
  const double scale = std::max(1.0, k.value[kMilli]);
  for (size_t i = 0; i < sizes.size(); ++i) {
    price[i] /= scale;
    prices_.emplace_back(sizes[i], price[i]);
    price_of_[static_cast<size_t>(sizes[i])] = price[i];
    fluid_gpus_ += demand[i] * price[i];
  }
  for (int32_t size : exact_sizes)
    price_of_[static_cast<size_t>(size)] = price_of_[static_cast<size_t>(grid_size(size))];
  gap_value_ = knapsack(sizes, price).value;
}

double PackingPrices::price(int32_t milli) const {
  if (milli <= 0 || milli > kMilli) return 0.0;
  return price_of_[static_cast<size_t>(milli)];
}

double PackingPrices::loss(int32_t free_before_milli, int32_t free_after_milli) const {
  if (free_before_milli == free_after_milli) return 0.0;
  const double l =
      gap_value(free_before_milli) - gap_value(free_after_milli) - price(free_before_milli - free_after_milli);
  return std::max(0.0, l);
}

namespace {
// (size -> items, requested milli) of the GPU items of `requests`.
std::pair<std::map<int32_t, double>, double> gpu_items(std::span<const Request> requests) {
  std::map<int32_t, double> items;
  double requested_milli = 0;
  for (const Request& r : requests) {
    if (r.gpu_count <= 0 || r.gpu_milli <= 0) continue;
    const int32_t size = std::min(r.gpu_milli, kMilli);
    items[size] += r.gpu_count;
    requested_milli += static_cast<double>(r.gpu_count) * size;
  }
  return {std::move(items), requested_milli};
}

}  // namespace

double fluid_packing_gpus(const std::vector<std::pair<int32_t, double>>& items) {
  if (items.empty()) return 0.0;
  return PackingPrices(items).fluid_gpus();
}

namespace {
double waste_of(const std::map<int32_t, double>& items, double requested_milli) {
  const double gpus = fluid_packing_gpus(std::vector<std::pair<int32_t, double>>(items.begin(), items.end()));
  return std::max(0.0, kMilli * gpus - requested_milli);
}
}  // namespace

double packing_waste_milli(std::span<const Request> requests) {
  const auto [items, requested_milli] = gpu_items(requests);
  return waste_of(items, requested_milli);
}

bool gpu_use_is_milli(std::span<const Request> requests) {
  return std::all_of(requests.begin(), requests.end(),
                     [](const Request& r) { return r.is_plain() || (!r.is_gpu() && r.mig_devices.empty()); });
}

std::optional<double> mix_packing_bound(std::span<const Request> requests) {
  const auto [items, requested_milli] = gpu_items(requests);
  if (items.empty()) return std::nullopt;
  return requested_milli / (requested_milli + waste_of(items, requested_milli));
}

}  // namespace gpupack
