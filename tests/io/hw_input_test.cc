// Cluster YAML, workload CSV/YAML and MIG demand readers; the shipped
// examples load; bad input names the file, line and field.
#include "io/hw_input.h"

#include <gtest/gtest.h>

#include "io/input_error.h"
#include "mig/mig_geometry.h"
#include "mig/mig_parted_config.h"
#include "model/cluster_state.h"
#include "policy/registry.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

const std::string kExamples = std::string(GPUPACK_SOURCE_DIR) + "/examples/hardware/";

std::string error_of(const std::string& yaml) {
  try {
    parse_hw_cluster(yaml, "c.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HwInput, ExampleClusterLoadsWithModesTopologyAndLayouts) {
  const HwCluster c = read_hw_cluster(kExamples + "cluster.yaml");
  ASSERT_EQ(c.nodes.size(), 5u);
  EXPECT_EQ(c.nodes[0].name, "hgx-a100-0");
  ClusterState s(c.nodes);
  const NodeId a{0};
  EXPECT_EQ(s.gpu_mode(a, 0), GpuMode::kMig);
  EXPECT_EQ(s.gpu_mode(a, 4), GpuMode::kMps);
  EXPECT_EQ(s.mps_replicas(a, 4), 4);
  EXPECT_EQ(s.gpu_mode(a, 7), GpuMode::kExclusive);
  EXPECT_EQ(s.gpu_nvlink_domain(a, 5), 1);
  EXPECT_EQ(s.gpu_pcie_switch(a, 3), 1);
  EXPECT_EQ(s.numa_count(a), 2);
  EXPECT_EQ(s.gpu_numa(a, 6), 1);
  const NodeId h{2};
  EXPECT_EQ(s.node_name(h), "h100");
  EXPECT_TRUE(s.mig_fixed_layout(h, 1));
  EXPECT_EQ(s.mig_state(h, 1)->instance_count(), 4);
  EXPECT_EQ(c.mig_in_use[2][0], (std::vector<bool>{true, false}));
  EXPECT_EQ(s.gpu_mode(NodeId{3}, 0), GpuMode::kTimeSlice);
  EXPECT_DOUBLE_EQ(s.oversubscription(NodeId{3}, 0), 2.0);
}

TEST(HwInput, ExampleWorkloadsCarryEveryField) {
  const Workload y = read_hw_workload(kExamples + "workload.yaml");
  ASSERT_EQ(y.size(), 27u);
  EXPECT_EQ(y.names[0], "chat-small-0");
  EXPECT_EQ(y.requests[0].workload_class, WorkloadClass::kLatencySensitive);
  EXPECT_EQ(y.requests[0].gpu_memory_mib, 9000);
  const Workload c = read_hw_workload(kExamples + "workload.csv");
  ASSERT_EQ(c.size(), 9u);
  const Request& train = c.requests[6];
  EXPECT_EQ(train.gpu_count, 4);
  EXPECT_EQ(train.gpu_scope, GpuScope::kNvlink);
  EXPECT_TRUE(train.scope_required);
  const Request& pinned = c.requests[7];
  EXPECT_TRUE(pinned.numa_aligned);
  EXPECT_EQ(pinned.modes, mode_bit(GpuMode::kExclusive));
  EXPECT_EQ(c.requests[4].mig_profile, "1g.10gb");
  EXPECT_EQ(c.requests[8].bandwidth_milli, 200);
  EXPECT_EQ(c.requests[8].l2_milli, 100);
}

TEST(HwInput, BadClusterInputNamesLineAndField) {
  std::string e =
      error_of("node_pools:\n  - name: a\n    gpus: 2\n    model: Z9\n    cpu_milli: 1\n    memory_mib: 1\n");
  EXPECT_NE(e.find("c.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("Z9"), std::string::npos) << e;
  e = error_of(
      "node_pools:\n  - name: a\n    gpus: 2\n    model: T4\n    cpu_milli: 1\n    memory_mib: 1\n    mode: mig\n");
  EXPECT_NE(e.find("not MIG-capable"), std::string::npos) << e;
  e = error_of(
      "node_pools:\n  - name: a\n    gpus: 2\n    model: T4\n    cpu_milli: 1\n    memory_mib: 1\n    colour: red\n");
  EXPECT_NE(e.find("unknown field 'colour'"), std::string::npos) << e;
  e = error_of(
      "node_pools:\n  - name: a\n    gpus: 1\n    model: A100-40GB\n    cpu_milli: 1\n    memory_mib: 1\n"
      "    mode: mig\n    mig_layout: [\"4g.20gb@0\", \"3g.20gb@2\"]\n");
  EXPECT_NE(e.find("GPU 0"), std::string::npos) << e;
  e = error_of(
      "node_pools:\n  - name: a\n    gpus: 2\n    model: T4\n    cpu_milli: 1\n    memory_mib: 1\n    mode: [mps, "
      "mps]\n");
  EXPECT_NE(e.find("mps_replicas"), std::string::npos) << e;
  e = error_of("node_pools:\n  - name: a\n    gpus: 2\n    model: T4\n    cpu_milli: x\n    memory_mib: 1\n");
  EXPECT_NE(e.find("c.yaml:5"), std::string::npos) << e;
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
}

TEST(HwInput, BadWorkloadInputNamesTheField) {
  try {
    parse_hw_workload_yaml("pods:\n  - {name: a, num_gpu: 1, class: fast}\n", "w.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("w.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fast"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_hw_workload_yaml("pods:\n  - {name: a, num_gpu: 2, mig_profile: 1g.10gb}\n", "w.yaml"),
               InputError);
  // A MIG profile no GPU model has is refused where it is written, not left
  // to fail every such pod.
  try {
    parse_hw_workload_yaml("pods:\n  - {name: a, num_gpu: 1, mig_profile: 9g.99gb}\n", "w.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("w.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no GPU model has MIG profile \"9g.99gb\""), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse_hw_workload_yaml("pods:\n  - {name: a, num_gpu: 1, mig_profile: 1g.10gb}\n", "w.yaml"));
}

TEST(HwInput, MigPlanFromTheExampleIsValidAndApplies) {
  const HwCluster c = read_hw_cluster(kExamples + "cluster.yaml");
  const MigDemand d = read_mig_demand(kExamples + "demand.yaml");
  const auto inv = mig_inventory(c);
  const MigRepartitionPlan plan = plan_mig_repartition(inv, d);
  EXPECT_GT(plan.changed_gpus, 0);
  const std::string yaml = plan.config_yaml();
  EXPECT_TRUE(validate_mig_parted_config(yaml).empty());
  EXPECT_EQ(parse_mig_parted_config(yaml), plan.config);
  const auto applied = apply_mig_parted_config(inv, yaml, plan.node_labels);
  ASSERT_EQ(applied.size(), plan.gpus.size());
  for (size_t i = 0; i < applied.size(); ++i) {
    if (plan.gpus[i].on_demand) {
      // A dynamic-layout GPU makes its instances as pods arrive: the config
      // leaves it as it is.
      EXPECT_TRUE(inv[i].dynamic_layout) << i;
      EXPECT_EQ(applied[i], plan.gpus[i].before) << i;
      continue;
    }
    EXPECT_EQ(count_vector(applied[i]), count_vector(plan.gpus[i].after)) << i;
    // Busy GPUs keep their exact instances.
    if (!inv[i].idle()) {
      EXPECT_EQ(applied[i], plan.gpus[i].before);
    }
  }
  // Applied to the cluster model, the changed GPUs hold the planned layouts.
  HwCluster after = c;
  apply_mig_plan(after, plan);
  ClusterState state(after.nodes);
  int checked = 0;
  for (const MigGpuPlan& g : plan.gpus) {
    if (!g.changed) continue;
    int n = 0;
    while (state.node_name(NodeId{n}) != g.node) ++n;
    const MigGpuState* mig = state.mig_state(NodeId{n}, g.gpu_index);
    ASSERT_NE(mig, nullptr) << g.node << " GPU " << g.gpu_index;
    EXPECT_EQ(mig->instances(), g.after.instances());
    EXPECT_TRUE(state.mig_fixed_layout(NodeId{n}, g.gpu_index));
    ++checked;
  }
  EXPECT_EQ(checked, plan.changed_gpus);
  // The layouts now hold 6 free 1g.10gb instances on the H100 node (2 kept
  // on GPU 1, 4 new on GPU 3): 6 requests bind, a 7th does not.
  auto policy = make_policy("firstfit", {});
  Scheduler sched(*policy);
  Request small{1000, 1024, 1, 100, model_bit(*GpuCatalog::builtin().find("H100-80GB"))};
  small.mig_profile = "1g.10gb";
  for (int p = 0; p < 6; ++p) EXPECT_TRUE(sched.schedule(state, PodId{p}, small).placed()) << p;
  EXPECT_FALSE(sched.decide(state, small).placed());
  EXPECT_EQ(choose_placement(state, NodeId{2}, small).failed, Dimension::kMigSlot);  // node h100
  // H100 demand: 6 x 1g.10gb + 1 x 3g.40gb, with 2 x 1g.10gb free and a free
  // 3g.40gb already partitioned on GPU 0: all met after the plan.
  for (const auto& [model, counts] : plan.unmet_after)
    for (const auto& [profile, n] : counts) EXPECT_EQ(n, 0) << profile;
}

}  // namespace
}  // namespace gpupack
