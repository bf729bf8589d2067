// ExtenderService details not covered by the HTTP tests.
#include "server/extender_service.h"

#include <gtest/gtest.h>

#include "io/kubectl.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

// Pods without gpupack.io/gpu-memory-mib are charged their share of the
// GPU's memory; shares that add up to one GPU must fit on it even when the
// memory does not divide evenly (A100-80GB: 81,251 MiB is odd).
TEST(ExtenderService, ImpliedMemorySharesFillOneGpuExactly) {
  ExtenderService service("bestfit");
  std::vector<json> pods = {pod_json({.name = "half-a", .gpu_milli = 500}),
                            pod_json({.name = "half-b", .gpu_milli = 500})};
  std::vector<K8sPod> parsed;
  for (const json& p : pods) parsed.push_back(parse_pod(p));
  service.set_cluster({parse_node(node_json({.name = "one", .gpus = 1}))}, parsed, pods);
  ASSERT_EQ(service.bind(ExtenderBindingArgs{"half-a", "ml", "uid-half-a", "one"}).error, "");
  EXPECT_EQ(service.bind(ExtenderBindingArgs{"half-b", "ml", "uid-half-b", "one"}).error, "");
  EXPECT_EQ(service.assignments().size(), 2u);
}

}  // namespace
}  // namespace gpupack
