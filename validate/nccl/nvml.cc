// The NVML loader. Declarations written from NVML's documented ABI (see nvml.h).
// Every call goes through FLEETSIM_NVML, which checks its return code; the
// entry points are held in variables named as NVML names them, so that a
// failure message names the NVML call.
#include "validate/nccl/nvml.h"

#include <dlfcn.h>

namespace fleetsim::validate {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu;     // % of the sample period a kernel was executing
  unsigned int memory;  // % of the period device memory was read or written
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED
constexpr int kNvmlClockSm = 1;        // nvmlClockType_t NVML_CLOCK_SM
constexpr int kNvmlPcieTxBytes = 0;    // nvmlPcieUtilCounter_t NVML_PCIE_UTIL_TX_BYTES
constexpr int kNvmlPcieRxBytes = 1;    // ... NVML_PCIE_UTIL_RX_BYTES

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using BusHandleFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using UtilFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using ClockFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using PowerFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using PcieFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using ErrorStringFn = const char* (*)(nvmlReturn_t);

template <typename F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace

// The status of one NVML call, made in a member function of Nvml.
#define FLEETSIM_NVML(...) status((__VA_ARGS__), {"NVML", #__VA_ARGS__, __FILE__, __LINE__})

GpuStatus Nvml::status(int rc, const GpuCallSite& site) const {
  const bool ok = rc == kNvmlSuccess;
  const char* words = ok || !error_string_ ? nullptr : reinterpret_cast<ErrorStringFn>(error_string_)(rc);
  return GpuStatus(ok, rc, words, site);
}

Nvml::Nvml(int index, const std::string& pci_bus_id, const std::string& library) {
  lib_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = ::dlerror();
    why_ = e ? e : library + ": cannot be loaded";
    return;
  }
  const auto nvmlInit_v2 = sym<InitFn>(lib_, "nvmlInit_v2");
  const auto nvmlDeviceGetHandleByIndex_v2 = sym<HandleFn>(lib_, "nvmlDeviceGetHandleByIndex_v2");
  error_string_ = reinterpret_cast<Fn>(sym<ErrorStringFn>(lib_, "nvmlErrorString"));
  shutdown_ = reinterpret_cast<Fn>(sym<ShutdownFn>(lib_, "nvmlShutdown"));
  util_ = reinterpret_cast<Fn>(sym<UtilFn>(lib_, "nvmlDeviceGetUtilizationRates"));
  clock_ = reinterpret_cast<Fn>(sym<ClockFn>(lib_, "nvmlDeviceGetClockInfo"));
  power_ = reinterpret_cast<Fn>(sym<PowerFn>(lib_, "nvmlDeviceGetPowerUsage"));
  pcie_ = reinterpret_cast<Fn>(sym<PcieFn>(lib_, "nvmlDeviceGetPcieThroughput"));
  if (!nvmlInit_v2 || !nvmlDeviceGetHandleByIndex_v2 || !shutdown_ || !util_) {
    why_ = library + ": not NVML (nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2, nvmlShutdown or "
                     "nvmlDeviceGetUtilizationRates missing)";
    return;
  }
  if (const GpuStatus s = FLEETSIM_NVML(nvmlInit_v2()); !s.ok()) {
    why_ = "nvmlInit_v2: " + s.describe();
    return;
  }
  inited_ = true;
  nvmlDevice_t dev = nullptr;
  const auto nvmlDeviceGetHandleByPciBusId_v2 = sym<BusHandleFn>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!pci_bus_id.empty() && nvmlDeviceGetHandleByPciBusId_v2) {
    // CUDA writes a 4-digit PCI domain ("0000:17:00.0"), NVML's own form has 8.
    const std::string wide = pci_bus_id.find(':') == 4 ? "0000" + pci_bus_id : pci_bus_id;
    GpuStatus s = FLEETSIM_NVML(nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &dev));
    if ((!s.ok() || !dev) && wide != pci_bus_id)
      s = FLEETSIM_NVML(nvmlDeviceGetHandleByPciBusId_v2(wide.c_str(), &dev));
    if (!s.ok() || !dev) {
      why_ = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + "): " + (s.ok() ? "no device handle" : s.describe());
      return;
    }
  } else if (const GpuStatus s = FLEETSIM_NVML(nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned int>(index), &dev));
             !s.ok() || !dev) {
    why_ = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) +
           "): " + (s.ok() ? "no device handle" : s.describe());
    return;
  }
  device_ = dev;
}

Nvml::~Nvml() {
  if (inited_ && shutdown_) {
    const auto nvmlShutdown = reinterpret_cast<ShutdownFn>(shutdown_);
    FLEETSIM_NVML(nvmlShutdown()).warn();
  }
  if (lib_) ::dlclose(lib_);
}

bool Nvml::sample(NvmlSample* out, std::string* error) const {
  if (error) error->clear();
  if (!ok()) return false;
  *out = NvmlSample{};
  // A figure the device does not support stays -1 quietly; another failure leaves it -1 and is reported.
  auto read = [error](const GpuStatus& s) {
    if (!s.ok() && s.code() != kNvmlNotSupported && error && error->empty()) *error = s.message();
    return s.ok();
  };
  const auto nvmlDeviceGetUtilizationRates = reinterpret_cast<UtilFn>(util_);
  const auto nvmlDeviceGetClockInfo = reinterpret_cast<ClockFn>(clock_);
  const auto nvmlDeviceGetPowerUsage = reinterpret_cast<PowerFn>(power_);
  const auto nvmlDeviceGetPcieThroughput = reinterpret_cast<PcieFn>(pcie_);
  nvmlUtilization_t u{};
  if (read(FLEETSIM_NVML(nvmlDeviceGetUtilizationRates(device_, &u)))) out->util_gpu_pct = u.gpu;
  unsigned int v = 0;
  if (clock_ && read(FLEETSIM_NVML(nvmlDeviceGetClockInfo(device_, kNvmlClockSm, &v)))) out->sm_clock_mhz = v;
  if (power_ && read(FLEETSIM_NVML(nvmlDeviceGetPowerUsage(device_, &v)))) out->power_w = v / 1000.0;
  if (pcie_ && read(FLEETSIM_NVML(nvmlDeviceGetPcieThroughput(device_, kNvmlPcieTxBytes, &v)))) out->pcie_tx_kBps = v;
  if (pcie_ && read(FLEETSIM_NVML(nvmlDeviceGetPcieThroughput(device_, kNvmlPcieRxBytes, &v)))) out->pcie_rx_kBps = v;
  return true;
}

}  // namespace fleetsim::validate
