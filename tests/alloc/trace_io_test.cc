#include "alloc/trace_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "alloc/allocsim.h"
#include "alloc/caching_allocator.h"

namespace gpupack {
namespace {

class TraceIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpupack_trace_io_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  void expect_error(const std::string& path, const std::string& fragment) {
    try {
      read_trace_file(path);
      FAIL() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
  std::filesystem::path dir_;
};

TEST_F(TraceIo, CsvReadsEventsAndAssignsReusedSlots) {
  const auto p = write("t.csv",
                       "# comment\n"
                       "time_us,action,id,size_bytes,stream\n"
                       "0,alloc,10,1000,0\n"
                       "1,alloc,0x20,3000000,1\n"
                       "2,free,10,,0\n"
                       "3,alloc,10,512,\n");
  Trace t = read_trace_file(p);
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[1].id, 0x20u);
  EXPECT_EQ(t.events[1].stream, 1);
  EXPECT_EQ(t.events[2].action, TraceAction::kFree);
  EXPECT_EQ(t.events[2].slot, t.events[0].slot);
  EXPECT_EQ(t.events[3].slot, t.events[0].slot);  // slot reused after the free
  EXPECT_EQ(t.slots, 2u);
}

TEST_F(TraceIo, CsvErrorsNameFileLineAndField) {
  expect_error(write("a.csv", "time,action\n"), "a.csv:1: expected the header");
  expect_error(write("b.csv", "time_us,action,id,size_bytes,stream\n0,alloc,1,-5,0\n"),
               "b.csv:2: field size_bytes: '-5'");
  expect_error(write("c.csv", "time_us,action,id,size_bytes,stream\n0,alloc,1,5,0\n1,alloc,1,5,0\n"),
               "c.csv:3: id 1 allocated again while still live");
  expect_error(write("d.csv", "time_us,action,id,size_bytes,stream\n\n0,free,7,,0\n"),
               "d.csv:3: free of id 7 that is not live");
  expect_error(write("e.csv", "time_us,action,id,size_bytes,stream\n0,alloc,1,5\n"), "e.csv:2: expected 5 fields");
}

TEST_F(TraceIo, JsonEventsFormat) {
  const auto p = write("t.json", R"({"events": [
      {"time_us": 0, "action": "alloc", "id": 1, "size_bytes": 2048, "stream": 2},
      {"time_us": 5, "action": "free", "id": 1}]})");
  Trace t = read_trace_file(p);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].size_bytes, 2048u);
  EXPECT_EQ(t.events[0].stream, 2);
  expect_error(write("bad.json", R"({"events": [{"action": "alloc", "id": 1}]})"), "events[0] field size_bytes");
  expect_error(write("bad2.json", R"({"events": [{"action": "grow", "id": 1}]})"), "events[0] field action: 'grow'");
  expect_error(write("bad3.json", "{"), "invalid JSON");
}

TEST_F(TraceIo, SnapshotDeviceTracesReplayTensorEventsOnly) {
  // A free with no alloc (allocated before the ring buffer began) is skipped;
  // segment and free_requested entries are skipped; the freed address is
  // reused by a later alloc.
  const auto p = write("snap.json", R"({"segments": [], "device_traces": [[
      {"action": "free_completed", "addr": 999, "size": 4096, "stream": 0},
      {"action": "segment_alloc", "addr": 1000, "size": 2097152, "stream": 0},
      {"action": "alloc", "addr": 1000, "size": 1000, "stream": 0, "time_us": 17},
      {"action": "alloc", "addr": 2024, "size": 700, "stream": 0},
      {"action": "free_requested", "addr": 1000, "size": 1000, "stream": 0},
      {"action": "free_completed", "addr": 1000, "size": 1000, "stream": 0},
      {"action": "alloc", "addr": 1000, "size": 30000000, "stream": 0},
      {"action": "oom", "device_free": 0, "size": 4, "stream": 0}
    ], []]})");
  Trace t = read_trace_file(p);
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.skipped_frees, 1u);
  EXPECT_EQ(t.skipped_entries, 3u);
  EXPECT_EQ(t.events[0].time_us, 17);
  EXPECT_EQ(t.events[0].size_bytes, 1000u);  // unrounded; the model rounds
  EXPECT_EQ(t.events[2].action, TraceAction::kFree);
  // Replay: 1000 -> 1024 and 700 -> 1024 share a small segment; 30 MB gets its own.
  ReplayResult r = replay(t, AllocConfig{}, ReplayOptions{});
  EXPECT_EQ(r.summary.peak_allocated_bytes, 1024u + 30000128u);  // the first block is freed before
  EXPECT_EQ(r.summary.peak_reserved_bytes, 2 * kMiB + 30 * kMiB);
  EXPECT_EQ(r.summary.device_allocs, 2u);
  // Device 1 is empty; device 2 does not exist.
  EXPECT_TRUE(read_trace_json(p, 1).events.empty());
  EXPECT_THROW(read_trace_json(p, 2), std::runtime_error);
}

TEST_F(TraceIo, CsvRoundTrip) {
  Trace t;
  t.events.push_back({0, 5, 1234, 0, 3, TraceAction::kAlloc});
  t.events.push_back({9, 5, 0, 0, 3, TraceAction::kFree});
  finalize_trace(t, "mem");
  const auto p = (dir_ / "rt.csv").string();
  write_trace_csv(t, p);
  Trace back = read_trace_file(p);
  ASSERT_EQ(back.events.size(), 2u);
  EXPECT_EQ(back.events[0].size_bytes, 1234u);
  EXPECT_EQ(back.events[0].stream, 3);
  EXPECT_EQ(back.events[1].time_us, 9);
}

TEST(Replay, OomUnderCapIsRecordedAndTheTraceGoesOn) {
  Trace t;
  t.events.push_back({0, 1, 60 * kMiB, 0, 0, TraceAction::kAlloc});
  t.events.push_back({1, 2, 60 * kMiB, 0, 0, TraceAction::kAlloc});  // OOM under 100 MiB
  t.events.push_back({2, 2, 0, 0, 0, TraceAction::kFree});           // ignored
  t.events.push_back({3, 1, 0, 0, 0, TraceAction::kFree});
  t.events.push_back({4, 3, 80 * kMiB, 0, 0, TraceAction::kAlloc});  // fits after a retry
  finalize_trace(t, "mem");
  ReplayOptions opt;
  opt.device_total_bytes = 100 * kMiB;
  ReplayResult r = replay(t, AllocConfig{}, opt);
  ASSERT_TRUE(r.summary.first_oom.has_value());
  EXPECT_EQ(r.summary.first_oom->event, 1u);
  EXPECT_EQ(r.summary.first_oom->request_bytes, 60 * kMiB);
  EXPECT_EQ(r.summary.ooms, 1u);
  EXPECT_EQ(r.summary.alloc_retries, 2u);
  EXPECT_EQ(r.summary.final_reserved_bytes, 80 * kMiB);
  EXPECT_EQ(r.series.back().event, 4u);
  EXPECT_EQ(r.series.back().allocated_bytes, 80 * kMiB);
}

}  // namespace
}  // namespace gpupack
