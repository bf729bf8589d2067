// Prometheus text exposition (format 0.0.4) for `gpupack serve`, and the
// request-latency histogram behind gpupack_decision_duration_seconds.
//
// Contract:
// - LatencyHistogram: fixed buckets (seconds, see kLatencyBuckets) per verb,
//   plus a ring of the last kLatencyWindow exact samples per verb for
//   quantiles. observe() and the readers are thread-safe (one mutex); observe
//   is O(buckets).
// - render_metrics() writes every gpupack series (names and labels in
//   docs/SERVE.md) with HELP and TYPE lines; label values are escaped; output
//   passes `promtool check metrics`. Pure apart from reading the histogram.
// - render_process_metrics() writes gpupack_build_info{version} and the
//   standard process_* series of a Prometheus client (resident memory,
//   start time, CPU seconds, open file descriptors), read from /proc/self,
//   and gpupack_process_heap_{in_use,free}_bytes from the C library's heap
//   counters (util/heap.h); a figure the system does not give is left out.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/extender_service.h"

namespace gpupack {

inline constexpr std::array<double, 14> kLatencyBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005,
                                                           0.0075, 0.01,    0.025,  0.05,  0.1,   0.5,   1.0};
inline constexpr size_t kLatencyWindow = 100000;

class LatencyHistogram {
 public:
  void observe(const std::string& verb, double seconds);
  // Quantile q (0..1) of the recent samples of `verb`; 0 when none.
  double quantile(const std::string& verb, double q) const;
  size_t count(const std::string& verb) const;
  void reset();

  struct Series {
    std::array<uint64_t, kLatencyBuckets.size()> buckets{};  // non-cumulative
    uint64_t count = 0;
    double sum = 0;
    std::vector<double> window;
    size_t next = 0;
  };
  std::map<std::string, Series> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;
};

// Request counters by verb and HTTP status code.
class RequestCounters {
 public:
  void add(const std::string& verb, int code);
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> counts_;
};

std::string render_metrics(const ServiceMetrics& m, const LatencyHistogram& latency, const RequestCounters& requests);
std::string render_process_metrics();

// Escapes a label value (backslash, double quote, newline).
std::string escape_label(const std::string& v);

}  // namespace gpupack
