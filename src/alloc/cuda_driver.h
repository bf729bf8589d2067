// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so the
// binary builds and runs on machines without CUDA headers or a driver. Only
// the few calls the probe needs are bound; their types are declared here.
//
// Contract: CudaDriver::load() never throws; it returns an error message when
// the library or a symbol is missing or cuInit fails (no_device() tells
// "no GPU" apart from "no driver"). Allocations are plain device memory
// (cuMemAlloc), never managed memory. One CudaDeviceAllocator holds the
// device's primary context for its lifetime and frees any block it still
// holds on destruction. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/probe.h"

namespace gpupack {

class CudaDriver {
 public:
  enum class LoadError { kNone, kNoDriver, kNoDevice, kDriverCall };
  struct LoadResult {
    std::unique_ptr<CudaDriver> driver;
    LoadError error = LoadError::kNone;
    std::string message;
  };
  // library: the file name or path to dlopen.
  static LoadResult load(const std::string& library = "libcuda.so.1");
  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  int device_count() const { return device_count_; }
  std::string device_name(int index) const;
  // Opens device `index` for allocation; throws std::runtime_error on failure.
  std::unique_ptr<DeviceAllocator> open_device(int index) const;

  struct Api;  // function pointers, defined in cuda_driver.cc

 private:
  CudaDriver() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  int device_count_ = 0;
};

// Exit codes of `gpupack probe` (documented in docs/PROBE.md and --help).
inline constexpr int kProbeExitNoDriver = 3;     // libcuda.so.1 missing or unusable
inline constexpr int kProbeExitNoDevice = 4;     // driver present, no GPU visible
inline constexpr int kProbeExitDriverError = 5;  // a driver call failed

struct ProbeRun {
  int exit_code = 0;    // 0 or one of kProbeExit*
  std::string message;  // why, when exit_code != 0
  std::vector<GpuProbe> gpus;
};

// Loads the driver and probes every visible GPU in turn. Never throws.
ProbeRun probe_all_gpus(const std::string& library, const ProbeOptions& options);

}  // namespace gpupack
