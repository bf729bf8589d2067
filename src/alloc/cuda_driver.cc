#include "alloc/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace gpupack {
namespace {

// The few driver API types, declared here instead of including cuda.h.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;  // 64-bit on every supported platform
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

}  // namespace

struct CudaDriver::Api {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  std::string describe(CUresult rc) const {
    const char* text = nullptr;
    if (cuGetErrorString != nullptr && cuGetErrorString(rc, &text) == CUDA_SUCCESS && text != nullptr) {
      return fmt::format("{} ({})", text, rc);
    }
    return fmt::format("CUDA error {}", rc);
  }
};

namespace {

// Prefers the _v2 name where the driver exports one.
template <typename Fn>
bool bind(void* lib, Fn& out, const char* name, bool has_v2) {
  void* sym = nullptr;
  if (has_v2) sym = dlsym(lib, fmt::format("{}_v2", name).c_str());
  if (sym == nullptr) sym = dlsym(lib, name);
  out = reinterpret_cast<Fn>(sym);
  return sym != nullptr;
}

class CudaDeviceAllocator final : public DeviceAllocator {
 public:
  CudaDeviceAllocator(const CudaDriver::Api& api, CUdevice device, CUcontext ctx)
      : api_(api), device_(device), ctx_(ctx) {}
  ~CudaDeviceAllocator() override {
    api_.cuCtxSetCurrent(ctx_);
    for (CUdeviceptr p : live_) {
      if (p != 0) api_.cuMemFree(p);
    }
    api_.cuDevicePrimaryCtxRelease(device_);
  }
  std::optional<Handle> try_alloc(std::uint64_t bytes) override {
    CUdeviceptr ptr = 0;
    const CUresult rc = api_.cuMemAlloc(&ptr, static_cast<std::size_t>(bytes));
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) return std::nullopt;
    if (rc != CUDA_SUCCESS) throw std::runtime_error("cuMemAlloc: " + api_.describe(rc));
    live_.push_back(ptr);
    return live_.size() - 1;
  }
  void free(Handle handle) override {
    CUdeviceptr& p = live_.at(handle);
    if (p != 0) {
      const CUresult rc = api_.cuMemFree(p);
      p = 0;
      if (rc != CUDA_SUCCESS) throw std::runtime_error("cuMemFree: " + api_.describe(rc));
    }
    while (!live_.empty() && live_.back() == 0) live_.pop_back();
  }
  DeviceMemInfo mem_info() override {
    std::size_t free_b = 0, total_b = 0;
    const CUresult rc = api_.cuMemGetInfo(&free_b, &total_b);
    if (rc != CUDA_SUCCESS) throw std::runtime_error("cuMemGetInfo: " + api_.describe(rc));
    return DeviceMemInfo{free_b, total_b};
  }

 private:
  const CudaDriver::Api& api_;
  CUdevice device_;
  CUcontext ctx_;
  std::vector<CUdeviceptr> live_;
};

}  // namespace

CudaDriver::LoadResult CudaDriver::load(const std::string& library) {
  LoadResult result;
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    result.error = LoadError::kNoDriver;
    result.message =
        fmt::format("no CUDA driver: cannot load {} ({})", library, err != nullptr ? err : "unknown error");
    return result;
  }
  auto api = std::make_unique<Api>();
  bool ok =
      bind(lib, api->cuInit, "cuInit", false) && bind(lib, api->cuDeviceGetCount, "cuDeviceGetCount", false) &&
      bind(lib, api->cuDeviceGet, "cuDeviceGet", false) && bind(lib, api->cuDeviceGetName, "cuDeviceGetName", false) &&
      bind(lib, api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false) &&
      bind(lib, api->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", true) &&
      bind(lib, api->cuCtxSetCurrent, "cuCtxSetCurrent", false) && bind(lib, api->cuMemGetInfo, "cuMemGetInfo", true) &&
      bind(lib, api->cuMemAlloc, "cuMemAlloc", true) && bind(lib, api->cuMemFree, "cuMemFree", true);
  bind(lib, api->cuGetErrorString, "cuGetErrorString", false);  // optional
  if (!ok) {
    dlclose(lib);
    result.error = LoadError::kNoDriver;
    result.message = fmt::format("no usable CUDA driver: {} lacks a required driver API symbol", library);
    return result;
  }
  const CUresult rc = api->cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) {
    dlclose(lib);
    result.error = LoadError::kNoDevice;
    result.message = "CUDA driver present but no GPU is visible (cuInit: no device)";
    return result;
  }
  if (rc != CUDA_SUCCESS) {
    const std::string what = api->describe(rc);
    dlclose(lib);
    result.error = LoadError::kDriverCall;
    result.message = fmt::format("CUDA driver failed to initialise: cuInit: {}", what);
    return result;
  }
  int count = 0;
  const CUresult crc = api->cuDeviceGetCount(&count);
  if (crc != CUDA_SUCCESS || count <= 0) {
    dlclose(lib);
    result.error = LoadError::kNoDevice;
    result.message = "CUDA driver present but no GPU is visible (device count 0)";
    return result;
  }
  result.driver.reset(new CudaDriver());
  result.driver->handle_ = lib;
  result.driver->api_ = std::move(api);
  result.driver->device_count_ = count;
  return result;
}

CudaDriver::~CudaDriver() {
  api_.reset();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string CudaDriver::device_name(int index) const {
  CUdevice dev = 0;
  if (api_->cuDeviceGet(&dev, index) != CUDA_SUCCESS) return "unknown";
  char name[256] = {};
  if (api_->cuDeviceGetName(name, sizeof(name) - 1, dev) != CUDA_SUCCESS) return "unknown";
  return name;
}

std::unique_ptr<DeviceAllocator> CudaDriver::open_device(int index) const {
  CUdevice dev = 0;
  CUresult rc = api_->cuDeviceGet(&dev, index);
  if (rc != CUDA_SUCCESS) throw std::runtime_error(fmt::format("cuDeviceGet({}): {}", index, api_->describe(rc)));
  CUcontext ctx = nullptr;
  rc = api_->cuDevicePrimaryCtxRetain(&ctx, dev);
  if (rc != CUDA_SUCCESS) {
    throw std::runtime_error(fmt::format("cuDevicePrimaryCtxRetain({}): {}", index, api_->describe(rc)));
  }
  rc = api_->cuCtxSetCurrent(ctx);
  if (rc != CUDA_SUCCESS) {
    api_->cuDevicePrimaryCtxRelease(dev);
    throw std::runtime_error(fmt::format("cuCtxSetCurrent({}): {}", index, api_->describe(rc)));
  }
  return std::make_unique<CudaDeviceAllocator>(*api_, dev, ctx);
}

ProbeRun probe_all_gpus(const std::string& library, const ProbeOptions& options) {
  ProbeRun run;
  CudaDriver::LoadResult loaded = CudaDriver::load(library);
  switch (loaded.error) {
    case CudaDriver::LoadError::kNone:
      break;
    case CudaDriver::LoadError::kNoDriver:
      run.exit_code = kProbeExitNoDriver;
      break;
    case CudaDriver::LoadError::kNoDevice:
      run.exit_code = kProbeExitNoDevice;
      break;
    case CudaDriver::LoadError::kDriverCall:
      run.exit_code = kProbeExitDriverError;
      break;
  }
  if (run.exit_code != 0) {
    run.message = loaded.message;
    return run;
  }
  try {
    for (int i = 0; i < loaded.driver->device_count(); ++i) {
      auto device = loaded.driver->open_device(i);
      run.gpus.push_back(probe_device(*device, i, loaded.driver->device_name(i), options));
    }
  } catch (const std::exception& e) {
    run.exit_code = kProbeExitDriverError;
    run.message = e.what();
  }
  return run;
}

}  // namespace gpupack
