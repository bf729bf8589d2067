#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "defrag/plan_writers.h"
#include "defrag/planner.h"
#include "defrag/random_cluster.h"
#include "defrag/snapshot.h"
#include "io/input_error.h"

namespace gpupack {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpupack_defrag_" + name)).string();
}

TEST(DefragSnapshot, RoundTripKeepsNodesPodsPendingAndMetadata) {
  auto c = testing::make_random_cluster(3, 4, 4, 50, 2, true);
  c.infos[0].name = "train-0";
  c.infos[0].ns = "ml";
  const std::string path = temp_file("roundtrip.json");
  write_snapshot(path, c.state, c.infos, c.pending, {{"group-0", 1}});
  const Snapshot back = read_snapshot(path);
  ASSERT_EQ(back.state.node_count(), c.state.node_count());
  ASSERT_EQ(back.state.bound_pod_count(), c.state.bound_pod_count());
  EXPECT_EQ(back.state.gpu_used_milli(), c.state.gpu_used_milli());
  const auto orig = c.state.bound_pods();
  for (size_t i = 0; i < orig.size(); ++i) {
    const PodId id{static_cast<int32_t>(i)};  // renumbered in file order
    EXPECT_EQ(back.state.request(id), c.state.request(orig[i]));
    EXPECT_EQ(back.state.assignment(id), c.state.assignment(orig[i]));
    EXPECT_EQ(back.infos[i].immovable, move_info(c.infos, orig[i]).immovable);
    EXPECT_EQ(back.infos[i].group, move_info(c.infos, orig[i]).group);
    EXPECT_EQ(back.infos[i].checkpointable, move_info(c.infos, orig[i]).checkpointable);
  }
  EXPECT_EQ(back.infos[0].name, "train-0");
  EXPECT_EQ(back.infos[0].ns, "ml");
  ASSERT_EQ(back.pending.size(), c.pending.size());
  for (size_t i = 0; i < c.pending.size(); ++i) EXPECT_EQ(back.pending[i].request, c.pending[i].request);
  EXPECT_EQ(back.max_unavailable.at("group-0"), 1);
}

TEST(DefragSnapshot, BadInputNamesTheFieldAndValue) {
  const std::string nodes =
      R"("nodes":[{"name":"a","cpu_milli":8000,"memory_mib":1024,"gpus":2,"gpu_model":"V100M16"}])";
  auto expect_error = [&](const std::string& text, const std::string& fragment) {
    try {
      parse_snapshot(text, "state.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_THAT(e.what(), HasSubstr("state.json"));
      EXPECT_THAT(e.what(), HasSubstr(fragment));
    }
  };
  expect_error("{", "malformed JSON");
  expect_error(R"({"format":"other/v9",)" + nodes + R"(,"pods":[]})", "unknown format 'other/v9'");
  expect_error(
      R"({"format":"gpupack-state/v1","nodes":[{"name":"a","cpu_milli":1,"memory_mib":1,"gpus":1,"gpu_model":"Z9"}],"pods":[]})",
      "unknown GPU model 'Z9'");
  const std::string pod = R"({"name":"p","cpu_milli":1000,"memory_mib":10,"gpu_count":1,"gpu_milli":500,)";
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes + R"(,"pods":[)" + pod + R"("node":"b","gpus":[0]}]})",
               "pods[0].node: unknown node 'b'");
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes + R"(,"pods":[)" + pod + R"("node":"a","gpus":[5]}]})",
               "pods[0].gpus[0]: GPU 5 does not exist");
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes + R"(,"pods":[)" + pod + R"("node":"a","gpus":[0,1]}]})",
               "2 GPUs listed for a pod of gpu_count 1");
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes +
                   R"(,"pods":[{"name":"p","cpu_milli":9000,"memory_mib":10,"gpu_count":0,"node":"a","gpus":[]}]})",
               "does not fit where it is bound");
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes + R"(,"pods":[)" + pod + R"("node":"a","gpus":[0]},)" + pod +
                   R"("node":"a","gpus":[1]}]})",
               "duplicate pod 'default/p'");
  expect_error(R"({"format":"gpupack-state/v1",)" + nodes + R"(,"pods":[{"name":"p","cpu_milli":"x"}]})",
               "pods[0].cpu_milli: expected an integer");
}

TEST(DefragWriters, TableJsonAndEvictionListDescribeThePlan) {
  ClusterState s({{"a", 32000, 65536, 2, 0}, {"b", 32000, 65536, 2, 0}});
  ASSERT_TRUE(s.bind(PodId{0}, Request{1000, 10, 1, 500, 0}, {NodeId{0}, 0b01, 500}).is_ok());
  ASSERT_TRUE(s.bind(PodId{1}, Request{1000, 10, 1, 600, 0}, {NodeId{0}, 0b10, 600}).is_ok());
  ASSERT_TRUE(s.bind(PodId{2}, Request{1000, 10, 1, 400, 0}, {NodeId{1}, 0b01, 400}).is_ok());
  ASSERT_TRUE(s.bind(PodId{3}, Request{1000, 10, 1, 400, 0}, {NodeId{1}, 0b10, 400}).is_ok());
  PodMoveInfos infos(5);
  infos[0].name = "small";
  infos[1].name = "big";
  infos[1].ns = "team-a";
  infos[1].checkpointable = true;
  infos[4].name = "waiting";
  DefragGoal goal;
  goal.pending = {{PodId{4}, Request{1000, 10, 2, 1000, 0}}};
  const DefragPlan plan = plan_defrag(s, goal, {}, infos);
  ASSERT_TRUE(validate_plan(s, plan, goal, {}, infos).empty());
  ASSERT_TRUE(plan.not_admitted.empty());
  // Both pods on node a must leave it for the 2-GPU pod: both go to b.
  const std::string table = format_plan_table(plan, s, infos);
  EXPECT_THAT(table, HasSubstr("waiting"));
  EXPECT_THAT(table, HasSubstr("admit"));
  // A pod outside the default namespace is named with its namespace.
  EXPECT_THAT(table, HasSubstr("team-a/big"));
  EXPECT_THAT(table, Not(HasSubstr("default/")));
  const auto j = plan_to_json(plan, s, infos);
  EXPECT_EQ(j["moves"], plan.moves());
  // 600 + 400 and 500 + 400 fill two GPUs: no plan frees more than 2.
  EXPECT_EQ(repack_free_gpus_max(s), 2);
  EXPECT_EQ(j["repack_free_gpus_max"], 2);
  EXPECT_THAT(table, HasSubstr("(no plan ends with more than 2)"));
  // The 2-GPU pod takes two GPUs: moves per GPU admitted = moves / 2.
  ASSERT_GT(plan.moves(), 0);
  EXPECT_DOUBLE_EQ(j["moves_per_gpu_admitted"].get<double>(), plan.moves() / 2.0);
  EXPECT_THAT(table, HasSubstr(fmt::format("(2000 GPU milli, {:.1f} moves per GPU)", plan.moves() / 2.0)));
  DefragPlan nothing = plan;
  nothing.steps.clear();
  nothing.after = nothing.before;
  nothing.use = BudgetUse{};
  EXPECT_TRUE(plan_to_json(nothing, s, infos)["moves_per_gpu_admitted"].is_null());
  EXPECT_FALSE(moves_per_gpu_admitted(nothing).has_value());
  EXPECT_EQ(j["steps"].size(), plan.steps.size());
  EXPECT_EQ(j["steps"].back()["kind"], "admit");
  EXPECT_EQ(j["steps"].back()["to"]["node"], "a");
  const auto ev = eviction_list(plan, s, infos);
  EXPECT_EQ(ev["kind"], "List");
  int evictions = 0;
  for (const PlanStep& st : plan.steps) evictions += st.kind == MoveKind::kEvict || st.kind == MoveKind::kMigrate;
  ASSERT_EQ(evictions, 2);
  ASSERT_EQ(static_cast<int>(ev["items"].size()), evictions);
  for (const auto& item : ev["items"]) {
    EXPECT_EQ(item["apiVersion"], "policy/v1");
    EXPECT_EQ(item["kind"], "Eviction");
    EXPECT_EQ(item["metadata"]["annotations"]["gpupack.io/target-node"], "b");
  }
}

}  // namespace
}  // namespace gpupack
