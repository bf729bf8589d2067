// A node as described by an input file, before it enters a ClusterState.
//
// Contract: plain value; units in names. All GPUs of a node are of one model.
// The hardware fields are optional: an empty `gpus` means every GPU is in the
// openb "shared" mode with no topology; an empty `numa` means one NUMA node
// holding all CPUs and memory. When given, `gpus` has one entry per GPU and
// every GPU's `numa` indexes `numa` (docs/HARDWARE.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mig/mig_slots.h"
#include "model/gpu_catalog.h"
#include "model/request.h"

namespace gpupack {

// How one GPU is set up and where it sits in the node.
struct GpuSetup {
  GpuMode mode = GpuMode::kShared;
  int32_t mps_replicas = 0;       // MPS: clients per GPU (2..the model's cap)
  double oversubscription = 1.0;  // time-slice: compute oversubscription factor (>= 1)
  // MIG: false = instances are created and destroyed as pods come and go
  // (the scheduler chooses the start); true = `mig_layout` is fixed (as
  // mig-parted applied it) and pods take its free instances.
  bool mig_fixed_layout = false;
  std::vector<MigPlacement> mig_layout = {};  // fixed layout instances
  int8_t numa = 0;                            // NUMA node id (index into NodeSpec::numa)
  int8_t pcie_switch = -1;                    // PCIe switch id; -1 = unknown
  int8_t nvlink_domain = -1;                  // NVLink domain id; -1 = none
};

struct NumaSpec {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  GpuModelId gpu_model = 0;         // meaningless when gpu_count == 0
  std::vector<GpuSetup> gpus = {};  // empty = all shared, no topology
  std::vector<NumaSpec> numa = {};  // empty = one NUMA node
  // Memory of each GPU; 0 = the catalog's figure for gpu_model. Not a
  // hardware setup: only requests that ask for GPU memory read it.
  int64_t gpu_memory_mib = 0;
  // MIG devices a device plugin advertises (mixed strategy), counted per
  // profile; each profile at most once. Not a hardware setup.
  std::vector<MigDeviceCount> mig_devices = {};

  // True when any hardware field is set.
  bool has_hardware_setup() const { return !gpus.empty() || !numa.empty(); }
};

}  // namespace gpupack
