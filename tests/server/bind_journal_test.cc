// The snapshot-mode bind journal: records are appended and read back in
// order, a record cut short by a crash is skipped, anything else unreadable
// is an error naming the line, and replay binds exactly the pods it names.
#include "server/bind_journal.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/kubectl.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;

std::string temp_path(const std::string& name) {
  const std::string p = ::testing::TempDir() + "/" + name;
  std::remove(p.c_str());
  return p;
}

TEST(BindJournal, AppendsRecordsThatReadBackInOrder) {
  const std::string path = temp_path("bj_order.journal");
  {
    BindJournal j(path);
    EXPECT_EQ(j.bind(parse_pod(testing::pod_json({.name = "a", .gpus = 2})), "n0", "n0:0,1"), "");
    EXPECT_EQ(j.bind(parse_pod(testing::pod_json({.name = "b", .cpu = "1"})), "n1", ""), "");
  }
  {
    BindJournal again(path);  // appends to what is there
    EXPECT_EQ(again.bind(parse_pod(testing::pod_json({.name = "c", .gpu_milli = 300})), "n0", "n0:2@300"), "");
  }
  const std::vector<BindRecord> r = read_bind_journal(path);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].namespace_name, "ml");
  EXPECT_EQ(r[0].name, "a");
  EXPECT_EQ(r[0].uid, "uid-a");
  EXPECT_EQ(r[0].node, "n0");
  EXPECT_EQ(r[0].gpus, "n0:0,1");
  EXPECT_EQ(r[1].gpus, "");
  EXPECT_EQ(r[2].name, "c");
  EXPECT_TRUE(read_bind_journal(temp_path("bj_missing.journal")).empty());
}

TEST(BindJournal, ATornLastRecordIsSkippedAndABadLineIsAnError) {
  const std::string path = temp_path("bj_torn.journal");
  {
    BindJournal j(path);
    ASSERT_EQ(j.bind(parse_pod(testing::pod_json({.name = "a", .gpus = 1})), "n0", "n0:0"), "");
  }
  std::ofstream(path, std::ios::app) << R"({"ns":"ml","name":"b","uid":"uid-b","no)";
  EXPECT_EQ(read_bind_journal(path).size(), 1u);
  std::ofstream(path, std::ios::app) << "\n{\"ns\":\"ml\"}\n";
  try {
    read_bind_journal(path);
    FAIL() << "a bad line was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: not a bind record"), std::string::npos) << e.what();
  }
}

TEST(BindJournal, AGangsRecordsCountOnlyAllTogether) {
  const std::string path = temp_path("bj_gang.journal");
  std::filesystem::remove(path);
  {
    BindJournal j(path);
    const std::vector<Binder::Item> items = {{parse_pod(testing::pod_json({.name = "g0", .gpus = 8})), "n0", "n0:0-7"},
                                             {parse_pod(testing::pod_json({.name = "g1", .gpus = 8})), "n1", "n1:0-7"}};
    EXPECT_EQ(j.bind_gang(items, "c1"), (std::vector<std::string>{"", ""}));
  }
  std::vector<BindRecord> r = read_bind_journal(path);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].gang, "c1");
  EXPECT_EQ(r[0].gang_size, 2u);
  EXPECT_EQ(r[1].name, "g1");
  // A commit whose write a crash cut after its first record: none of it.
  std::ofstream(path, std::ios::app)
      << R"({"ns":"ml","name":"h0","uid":"uid-h0","node":"n2","gpus":"","gang":"c2","of":2})"
      << "\n";
  r = read_bind_journal(path);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].name, "g1");
}

TEST(BindJournal, ReplayBindsThePodsItNamesAndNamesWhatItCannot) {
  std::vector<json> objects = {testing::pod_json({.name = "a", .gpus = 1}),
                               testing::pod_json({.name = "b", .cpu = "1"}),
                               testing::pod_json({.name = "elsewhere", .gpus = 1, .node = "n9"}),
                               testing::pod_json({.name = "recreated", .uid = "new-uid", .gpus = 1})};
  const std::vector<BindRecord> records = {{"ml", "a", "uid-a", "n0", "n0:3"},
                                           {"ml", "b", "uid-b", "n1", ""},
                                           {"ml", "gone", "uid-gone", "n0", "n0:4"},
                                           {"ml", "elsewhere", "uid-elsewhere", "n0", "n0:5"},
                                           {"ml", "recreated", "old-uid", "n0", "n0:6"}};
  const std::vector<std::string> messages = apply_bind_records(objects, records);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_NE(messages[0].find("ml/gone"), std::string::npos);
  EXPECT_NE(messages[1].find("ml/elsewhere: the journal binds it to n0, the pod list to n9"), std::string::npos);
  EXPECT_NE(messages[2].find("ml/recreated"), std::string::npos);
  const K8sPod a = parse_pod(objects[0]);
  EXPECT_EQ(a.node_name, "n0");
  ASSERT_TRUE(a.assigned.has_value());
  EXPECT_EQ(a.assigned->gpu_mask, 0b1000u);
  EXPECT_EQ(parse_pod(objects[1]).node_name, "n1");
  EXPECT_EQ(parse_pod(objects[2]).node_name, "n9");
  EXPECT_EQ(parse_pod(objects[3]).node_name, "");
}

TEST(BindJournal, AJournalThatCannotBeOpenedIsAnErrorNamingIt) {
  try {
    BindJournal j("/nonexistent-dir/x.journal");
    FAIL() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.journal"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpupack
