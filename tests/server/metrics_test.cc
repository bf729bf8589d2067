// The /metrics families: every one that render_metrics() and
// render_process_metrics() write is documented in docs/SERVE.md's table and
// every documented one is written; process metrics are read from /proc.
// Series written only when known (the repack bound) are set here.
#include "server/metrics.h"
#include "util/heap.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "util/version.h"

namespace gpupack {
namespace {

// ServiceMetrics with every optional figure known.
ServiceMetrics full_metrics() {
  ServiceMetrics m;
  m.repack = ClusterMetrics::Repack{};
  return m;
}

std::set<std::string> families(const std::string& text) {
  std::set<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string hash, what, name;
    f >> hash >> what >> name;
    if (hash == "#" && what == "TYPE") out.insert(name);
  }
  return out;
}

// The metric names of docs/SERVE.md's table: the first cell of each row
// that starts with a backticked metric; "`_ratio`" after "`a_b_milli`" is
// "a_b_ratio".
std::set<std::string> documented(const std::string& doc = "docs/SERVE.md") {
  std::ifstream in(std::string(GPUPACK_SOURCE_DIR) + "/" + doc);
  std::set<std::string> out;
  const std::regex name("`([a-z_]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `gpupack_", 0) != 0 && line.rfind("| `process_", 0) != 0) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    std::string last;
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), name); it != std::sregex_iterator(); ++it) {
      std::string n = (*it)[1];
      if (n[0] == '_' && !last.empty()) n = last.substr(0, last.rfind('_')) + n;
      out.insert(n);
      last = n;
    }
  }
  return out;
}

TEST(Metrics, EveryFamilyIsDocumentedAndEveryDocumentedOneIsWritten) {
  const std::string text =
      render_metrics(full_metrics(), LatencyHistogram{}, RequestCounters{}) + render_process_metrics();
  const std::set<std::string> written = families(text), docs = documented();
  ASSERT_FALSE(docs.empty()) << "no metric table in docs/SERVE.md";
  for (const std::string& n : written) EXPECT_TRUE(docs.count(n)) << n << " is written but not in docs/SERVE.md";
  // The heap figures are left out where the C library does not give them
  // (sanitizer builds own the heap), never written as zeros.
  const bool heap_known = heap_stats().known;
  for (const std::string& n : docs) {
    if (!heap_known && n.rfind("gpupack_process_heap_", 0) == 0) {
      EXPECT_FALSE(written.count(n)) << n << " is written though the heap is not known";
      continue;
    }
    EXPECT_TRUE(written.count(n)) << n << " is in docs/SERVE.md but not written";
  }
}

// docs/KUBERNETES.md lists the series the alert rules rely on: each exists.
TEST(Metrics, TheSeriesKubernetesMdNamesAreWritten) {
  const std::string text =
      render_metrics(full_metrics(), LatencyHistogram{}, RequestCounters{}) + render_process_metrics();
  const std::set<std::string> written = families(text), docs = documented("docs/KUBERNETES.md");
  EXPECT_GE(docs.size(), 5u) << "no metric table in docs/KUBERNETES.md";
  for (const std::string& n : docs) EXPECT_TRUE(written.count(n)) << n << " is in docs/KUBERNETES.md but not written";
}

TEST(Metrics, ProcessMetricsComeFromThisProcess) {
  const std::string text = render_process_metrics();
  EXPECT_NE(text.find("gpupack_build_info{version=\"" + std::string(kVersion) + "\"} 1\n"), std::string::npos);
  auto value = [&](const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
  };
  EXPECT_GT(value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(value("process_start_time_seconds"), 1.7e9);  // after 2023
  EXPECT_GE(value("process_cpu_seconds_total"), 0.0);
  EXPECT_GE(value("process_open_fds"), 3.0);
}

}  // namespace
}  // namespace gpupack
