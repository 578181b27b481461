// The NVML loader. Declarations written from NVML's documented ABI (see nvml.h).
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

Nvml::Nvml(int index, const std::string& pci_bus_id, const std::string& library) {
  lib_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = ::dlerror();
    why_ = e ? e : library + ": cannot be loaded";
    return;
  }
  const auto init = sym<InitFn>(lib_, "nvmlInit_v2");
  const auto handle = sym<HandleFn>(lib_, "nvmlDeviceGetHandleByIndex_v2");
  const auto errstr = sym<ErrorStringFn>(lib_, "nvmlErrorString");
  shutdown_ = reinterpret_cast<Fn>(sym<ShutdownFn>(lib_, "nvmlShutdown"));
  util_ = reinterpret_cast<Fn>(sym<UtilFn>(lib_, "nvmlDeviceGetUtilizationRates"));
  clock_ = reinterpret_cast<Fn>(sym<ClockFn>(lib_, "nvmlDeviceGetClockInfo"));
  power_ = reinterpret_cast<Fn>(sym<PowerFn>(lib_, "nvmlDeviceGetPowerUsage"));
  pcie_ = reinterpret_cast<Fn>(sym<PcieFn>(lib_, "nvmlDeviceGetPcieThroughput"));
  if (!init || !handle || !shutdown_ || !util_) {
    why_ = library + ": not NVML (nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2, nvmlShutdown or "
                     "nvmlDeviceGetUtilizationRates missing)";
    return;
  }
  auto describe = [errstr](nvmlReturn_t rc) {
    const char* s = errstr ? errstr(rc) : nullptr;
    return std::string(s ? s : "error") + " (" + std::to_string(rc) + ")";
  };
  if (const nvmlReturn_t rc = init(); rc != kNvmlSuccess) {
    why_ = "nvmlInit_v2: " + describe(rc);
    return;
  }
  inited_ = true;
  nvmlDevice_t dev = nullptr;
  const auto by_bus = sym<BusHandleFn>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!pci_bus_id.empty() && by_bus) {
    // CUDA writes a 4-digit PCI domain ("0000:17:00.0"), NVML's own form has 8.
    const std::string wide = pci_bus_id.find(':') == 4 ? "0000" + pci_bus_id : pci_bus_id;
    nvmlReturn_t rc = by_bus(pci_bus_id.c_str(), &dev);
    if ((rc != kNvmlSuccess || !dev) && wide != pci_bus_id) rc = by_bus(wide.c_str(), &dev);
    if (rc != kNvmlSuccess || !dev) {
      why_ = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + "): " + describe(rc);
      return;
    }
  } else if (const nvmlReturn_t rc = handle(static_cast<unsigned int>(index), &dev); rc != kNvmlSuccess || !dev) {
    why_ = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + "): " + describe(rc);
    return;
  }
  device_ = dev;
}

Nvml::~Nvml() {
  if (inited_ && shutdown_) reinterpret_cast<ShutdownFn>(shutdown_)();
  if (lib_) ::dlclose(lib_);
}

bool Nvml::sample(NvmlSample* out) const {
  if (!ok()) return false;
  *out = NvmlSample{};
  nvmlUtilization_t u{};
  if (reinterpret_cast<UtilFn>(util_)(device_, &u) == kNvmlSuccess) out->util_gpu_pct = u.gpu;
  unsigned int v = 0;
  if (clock_ && reinterpret_cast<ClockFn>(clock_)(device_, kNvmlClockSm, &v) == kNvmlSuccess) out->sm_clock_mhz = v;
  if (power_ && reinterpret_cast<PowerFn>(power_)(device_, &v) == kNvmlSuccess) out->power_w = v / 1000.0;
  if (pcie_ && reinterpret_cast<PcieFn>(pcie_)(device_, kNvmlPcieTxBytes, &v) == kNvmlSuccess) out->pcie_tx_kBps = v;
  if (pcie_ && reinterpret_cast<PcieFn>(pcie_)(device_, kNvmlPcieRxBytes, &v) == kNvmlSuccess) out->pcie_rx_kBps = v;
  return true;
}

}  // namespace fleetsim::validate
