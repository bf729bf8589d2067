#include "io/dcgm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace gpupack {
namespace {

// Shaped like a dcgm-exporter scrape in Kubernetes mode; values made up.
const char* kScrape =
    "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n"
    "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"
    "DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:00:07.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA L40S\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"595.58.03\",container=\"\","
    "namespace=\"\",pod=\"\"} 40000\n"
    "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\",modelName=\"NVIDIA L40S\","
    "Hostname=\"node-1\",container=\"main\",namespace=\"ml\",pod=\"train-0\"} 1200 1700000000000\n"
    "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\",modelName=\"NVIDIA L40S\","
    "Hostname=\"node-1\",container=\"main\",namespace=\"ml\",pod=\"train-0\"} 44000\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\",modelName=\"NVIDIA L40S\","
    "Hostname=\"node-1\",container=\"side\",namespace=\"ml\",pod=\"train-0\"} 44000\n"
    "DCGM_FI_PROF_DRAM_ACTIVE{gpu=\"1\", UUID=\"GPU-bbbb\", Hostname=\"node-1\", container=\"main\", "
    "namespace=\"ml\", pod=\"train-0\",} 0.690789\n"
    "\n"
    "# a plain comment\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-cccc\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-40GB\","
    "GPU_I_PROFILE=\"1g.5gb\",GPU_I_ID=\"13\",hostname=\"node-a\",container=\"trainer\",namespace=\"ml\","
    "pod=\"train-1\"} 3012\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",uuid=\"GPU-cccc\",hostname=\"node-a\"} 87\n"
    "process_cpu_seconds_total 12.5\n";

TEST(Prometheus, ParsesTextFormat) {
  PromScrape s = parse_prometheus_text(kScrape, "scrape.txt");
  ASSERT_EQ(s.samples.size(), 8u);
  EXPECT_EQ(s.types.at("DCGM_FI_DEV_FB_FREE"), "gauge");
  EXPECT_EQ(s.help.at("DCGM_FI_DEV_FB_FREE"), "Framebuffer memory free (in MiB).");
  EXPECT_EQ(s.samples[0].line, 3);
  EXPECT_EQ(*s.samples[0].label("modelName"), "NVIDIA L40S");
  EXPECT_EQ(s.samples[1].timestamp_ms, 1700000000000);
  EXPECT_DOUBLE_EQ(s.samples[4].value, 0.690789);
  EXPECT_EQ(s.samples[4].labels.size(), 6u);  // spaces and trailing comma allowed
  EXPECT_EQ(s.samples[7].name, "process_cpu_seconds_total");
  EXPECT_TRUE(s.samples[7].labels.empty());
}

TEST(Prometheus, EscapesAndSpecialValues) {
  PromScrape s = parse_prometheus_text(
      "m{a=\"x\\\"y\\\\z\\n\"} NaN\nm{a=\"2\"} +Inf\r\nm{a=\"3\"} -Inf -5\nm{a=\"4\"} 1e-3\n", "t");
  ASSERT_EQ(s.samples.size(), 4u);
  EXPECT_EQ(*s.samples[0].label("a"), "x\"y\\z\n");
  EXPECT_TRUE(std::isnan(s.samples[0].value));
  EXPECT_TRUE(std::isinf(s.samples[1].value));
  EXPECT_LT(s.samples[2].value, 0);
  EXPECT_EQ(s.samples[2].timestamp_ms, -5);
  EXPECT_DOUBLE_EQ(s.samples[3].value, 0.001);
}

std::string error_of(const std::string& text) {
  try {
    parse_prometheus_text(text, "m.txt");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Prometheus, ErrorsCarryLineNumbers) {
  EXPECT_NE(error_of("ok 1\nbad{a=\"1\" 2\n").find("m.txt:2:"), std::string::npos);
  EXPECT_NE(error_of("m{a=\"1\",a=\"2\"} 1\n").find("label a given twice"), std::string::npos);
  EXPECT_NE(error_of("m{a=\"\\x\"} 1\n").find("invalid escape"), std::string::npos);
  EXPECT_NE(error_of("m{a=\"1} 1\n").find("unterminated"), std::string::npos);
  EXPECT_NE(error_of("m 0x10\n").find("invalid sample value \"0x10\""), std::string::npos);
  EXPECT_NE(error_of("m one\n").find("invalid sample value"), std::string::npos);
  EXPECT_NE(error_of("m\n").find("has no value"), std::string::npos);
  EXPECT_NE(error_of("m 1 2 3\n").find("after the timestamp"), std::string::npos);
  EXPECT_NE(error_of("m 1 1.5\n").find("invalid timestamp"), std::string::npos);
  EXPECT_NE(error_of("1m 1\n").find("expected a metric name"), std::string::npos);
  EXPECT_NE(error_of("m{1a=\"\"} 1\n").find("expected a label name"), std::string::npos);
  EXPECT_NE(error_of("# TYPE m gauge\n# TYPE m counter\n").find("m.txt:2: second TYPE"), std::string::npos);
  EXPECT_NE(error_of("# TYPE m meter\n").find("invalid TYPE"), std::string::npos);
  std::string dup = error_of("m{a=\"1\",b=\"2\"} 1\n\nm{b=\"2\",a=\"1\"} 2\n");
  EXPECT_NE(dup.find("m.txt:3: series m already given on line 1"), std::string::npos) << dup;
  EXPECT_EQ(error_of("# just text\n#\n\n"), "");
}

TEST(Dcgm, GroupsByGpuAndPod) {
  DcgmObservations o = observe_dcgm(parse_prometheus_text(kScrape, "scrape.txt"), "scrape.txt");
  ASSERT_EQ(o.gpus.size(), 4u);
  const DcgmGpuObservation* idle = o.find_gpu("node-1", 0);
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->key.uuid, "GPU-aaaa");
  EXPECT_EQ(idle->metric(dcgm::kFbFree), 40000);
  EXPECT_FALSE(idle->metric(dcgm::kFbUsed).has_value());
  EXPECT_TRUE(idle->pods.empty());  // pod="" = unallocated
  EXPECT_EQ(idle->model, GpuCatalog::builtin().find("L40S"));

  const DcgmGpuObservation* busy = o.find_gpu("node-1", 1);
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->metric(dcgm::kFbUsed), 44000);
  EXPECT_EQ(busy->metric(dcgm::kFbFree), 1200);
  EXPECT_EQ(busy->pods, (std::vector<std::string>{"ml/train-0"}));

  // MIG instance, lower-case hostname/uuid spellings.
  const DcgmGpuObservation* mig = o.find_gpu("node-a", 0, 13);
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->mig_profile, "1g.5gb");
  EXPECT_EQ(mig->metric(dcgm::kFbUsed), 3012);
  EXPECT_EQ(mig->model, GpuCatalog::builtin().find("A100-40GB"));
  // The whole-GPU row of the same GPU is its own entity.
  const DcgmGpuObservation* whole = o.find_gpu("node-a", 0, -1);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->key.uuid, "GPU-cccc");
  EXPECT_EQ(whole->metric(dcgm::kGpuUtil), 87);

  ASSERT_EQ(o.pods.size(), 3u);
  EXPECT_EQ(o.pods[0].pod, "train-0");
  EXPECT_EQ(o.pods[0].container, "main");
  EXPECT_EQ(o.pods[0].metric(dcgm::kDramActive), 0.690789);
  EXPECT_EQ(o.pods[0].metric(dcgm::kFbUsed), 44000);
  EXPECT_EQ(o.pods[1].container, "side");
  EXPECT_EQ(o.pods[2].pod, "train-1");
  EXPECT_EQ(o.pods[2].gpu.gpu_instance, 13);
}

TEST(Dcgm, DcgmSampleWithoutGpuIsAnError) {
  auto scrape = parse_prometheus_text("ok 1\nDCGM_FI_DEV_GPU_UTIL{Hostname=\"n\"} 3\n", "s.txt");
  try {
    observe_dcgm(scrape, "s.txt");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("s.txt:2: DCGM_FI_DEV_GPU_UTIL has no gpu label"), std::string::npos)
        << e.what();
  }
  auto bad = parse_prometheus_text("DCGM_FI_DEV_GPU_UTIL{gpu=\"x\"} 3\n", "s.txt");
  EXPECT_THROW(observe_dcgm(bad, "s.txt"), std::invalid_argument);
}

TEST(Dcgm, MemoryValuesThatAreNoSizeAndEmptyScrapesAreErrors) {
  for (const char* v : {"+Inf", "1e30", "NaN", "-5"}) {
    const std::string text = std::string("DCGM_FI_DEV_FB_USED{gpu=\"0\",Hostname=\"n\"} ") + v + "\n";
    try {
      observe_dcgm(parse_prometheus_text(text, "s.txt"), "s.txt");
      FAIL() << v << " was read as a memory size";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("s.txt:1: DCGM_FI_DEV_FB_USED has value"), std::string::npos) << e.what();
    }
  }
  // Utilisation may be NaN (no sample yet): kept.
  EXPECT_EQ(observe_dcgm(parse_prometheus_text("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} NaN\n", "s.txt"), "s.txt").gpus.size(),
            1u);
  for (const char* text : {"", "# nothing here\n", "node_cpu_seconds_total 5\n"}) {
    try {
      observe_dcgm(parse_prometheus_text(text, "empty.txt"), "empty.txt");
      FAIL() << "\"" << text << "\" was read as a DCGM scrape";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("empty.txt: no DCGM samples"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gpupack
