#include "io/openb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/csv.h"
#include "io/input_error.h"
#include "sim/dynamic_workload.h"

namespace gpupack {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "gpupack_io_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OpenbReader, ReadsNodesAndPodsWithOptionalColumns) {
  const auto nodes = read_openb_nodes(write_temp("n.csv",
                                                 "sn,cpu_milli,memory_mib,gpu,model\n"
                                                 "node-a,64000,262144,2,P100\n"
                                                 "node-b,32000,131072,0,\n"));
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].gpu_count, 2);
  EXPECT_EQ(GpuCatalog::builtin().spec(nodes[0].gpu_model).name, "P100");
  EXPECT_EQ(nodes[1].gpu_count, 0);
  // A pod file without gpu_spec and the time columns (as multigpu50 is).
  const auto pods = read_openb_pods(write_temp("p.csv",
                                               "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                               "pod-1,6000,12288,1,460\n"
                                               "pod-2,88000,327680,8,1000\n"));
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].request, (Request{6000, 12288, 1, 460, 0}));
  EXPECT_EQ(pods[1].request.total_gpu_milli(), 8000);
  const auto full = read_openb_pods(write_temp(
      "p2.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "pod-1,1000,100,1,1000,V100M16|V100M32,LS,Running,5,100,6\n"));
  EXPECT_EQ(full[0].request.allowed_models,
            model_bit(*GpuCatalog::builtin().find("V100M16")) | model_bit(*GpuCatalog::builtin().find("V100M32")));
  EXPECT_EQ(full[0].creation_time_s, 5);
  EXPECT_EQ(full[0].deletion_time_s, 100);
}

TEST(OpenbReader, GangColumnsGroupPodsIntoOneDynamicJob) {
  const auto pods = read_openb_pods(write_temp("gang.csv",
                                               "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gang,gang_min_member\n"
                                               "w0,1000,100,8,1000,job,2\n"
                                               "solo,1000,100,1,1000,,\n"
                                               "w1,1000,100,8,1000,job,2\n"
                                               "w2,1000,100,8,1000,job,\n"));
  EXPECT_EQ(pods[0].gang, "job");
  EXPECT_EQ(pods[0].gang_min_member, 2);
  EXPECT_EQ(pods[1].gang, "");
  const DynamicWorkload w = jobs_from_openb(pods);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].name, "job");
  EXPECT_EQ(w.jobs[0].members.size(), 3u);
  EXPECT_EQ(w.jobs[0].member_names, (std::vector<std::string>{"w0", "w1", "w2"}));
  EXPECT_EQ(w.jobs[0].min_member, 2);
  EXPECT_EQ(w.jobs[1].member_names, (std::vector<std::string>{"solo"}));
  EXPECT_NE(error_of([] {
              read_openb_pods(write_temp("gang_bad.csv",
                                         "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gang,gang_min_member\n"
                                         "w0,1000,100,8,1000,,2\n"));
            }).find("gang_min_member without a gang"),
            std::string::npos);
}

TEST(OpenbReader, MalformedRowsNameFileLineColumnAndValue) {
  const std::string bad_int = write_temp("bad1.csv",
                                         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                         "pod-1,6000,12288,1,460\n"
                                         "pod-2,6x00,12288,1,460\n");
  EXPECT_THAT(error_of([&] { read_openb_pods(bad_int); }),
              ::testing::AllOf(::testing::HasSubstr("bad1.csv:3"), ::testing::HasSubstr("cpu_milli"),
                               ::testing::HasSubstr("'6x00'")));
  const std::string bad_milli = write_temp("bad2.csv",
                                           "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                           "pod-1,6000,12288,1,1460\n");
  EXPECT_THAT(error_of([&] { read_openb_pods(bad_milli); }),
              ::testing::AllOf(::testing::HasSubstr(":2"), ::testing::HasSubstr("gpu_milli")));
  const std::string bad_model = write_temp("bad3.csv",
                                           "sn,cpu_milli,memory_mib,gpu,model\n"
                                           "node-a,64000,262144,2,RTX9\n");
  EXPECT_THAT(error_of([&] { read_openb_nodes(bad_model); }),
              ::testing::AllOf(::testing::HasSubstr("bad3.csv:2"), ::testing::HasSubstr("unknown GPU model"),
                               ::testing::HasSubstr("RTX9")));
  const std::string short_row = write_temp("bad4.csv",
                                           "sn,cpu_milli,memory_mib,gpu,model\n"
                                           "node-a,64000,262144\n");
  EXPECT_THAT(error_of([&] { read_openb_nodes(short_row); }), ::testing::HasSubstr("bad4.csv:2: 3 fields"));
  const std::string missing_col = write_temp("bad5.csv", "sn,cpu_milli,gpu,model\nnode-a,1,1,T4\n");
  EXPECT_THAT(error_of([&] { read_openb_nodes(missing_col); }), ::testing::HasSubstr("missing column 'memory_mib'"));
  const std::string bad_spec = write_temp("bad6.csv",
                                          "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                          "pod-1,6000,12288,1,460,T4|K80\n");
  EXPECT_THAT(error_of([&] { read_openb_pods(bad_spec); }),
              ::testing::AllOf(::testing::HasSubstr("gpu_spec"), ::testing::HasSubstr("K80")));
  EXPECT_THAT(error_of([] { read_openb_pods("/nonexistent/pods.csv"); }), ::testing::HasSubstr("cannot open"));
}

TEST(OpenbReader, ReadsReplayFilesAndChecksTheIndexSequence) {
  const auto order = read_arrival_order(write_temp("o.csv", "idx,pod\n0,p-1\n1,p-0\n2,p-1\n"));
  EXPECT_EQ(order, (std::vector<std::string>{"p-1", "p-0", "p-1"}));
  EXPECT_THAT(error_of([&] { read_arrival_order(write_temp("o2.csv", "idx,pod\n0,p-1\n2,p-0\n")); }),
              ::testing::HasSubstr("expected idx 1"));
  const auto rank = read_node_rank(write_temp("r.csv", "node,rank\nb,0\na,1\n"));
  ASSERT_EQ(rank.size(), 2u);
  EXPECT_EQ(rank[1].node, "a");
  EXPECT_EQ(rank[1].rank, 1);
}

TEST(Csv, HandlesQuotesAndCrLf) {
  const CsvTable t = CsvTable::parse("a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\r\n", "mem");
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.field(t.rows()[0], 0), "x,1");
  EXPECT_EQ(t.field(t.rows()[0], 1), "say \"hi\"");
  EXPECT_THROW(CsvTable::parse("a\n\"open\n", "mem"), InputError);
  EXPECT_THROW(CsvTable::parse("", "mem"), InputError);
}

}  // namespace
}  // namespace gpupack
