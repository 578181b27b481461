// NVML loaded at run time (dlopen of libnvidia-ml.so.1), so that nothing needs
// NVML's header or library to build, and a machine without the driver still
// runs (the loader then says why, once, and callers fall back to their own
// accounting). Only the few entry points the GPU runner samples are declared,
// from NVML's documented ABI: nvmlReturn_t is an int (0 = success),
// nvmlDevice_t an opaque pointer, nvmlUtilization_t {unsigned gpu, memory}.
// Every NVML call's return code is checked (FLEETSIM_NVML in nvml.cc). CPU-only
// code: unit-tested with a stand-in library (tests/validate/).
#pragma once

#include <string>

#include "validate/nccl/gpu_status.h"

namespace fleetsim::validate {

// What one sample read; < 0 where the driver has no figure for this device.
struct NvmlSample {
  double util_gpu_pct = -1;   // utilization.gpu: % of the last period a kernel was running
  double sm_clock_mhz = -1;   // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  double power_w = -1;        // nvmlDeviceGetPowerUsage (mW) / 1000
  double pcie_tx_kBps = -1;   // nvmlDeviceGetPcieThroughput(TX_BYTES), KB/s over 20 ms
  double pcie_rx_kBps = -1;   // ... (RX_BYTES)
};

class Nvml {
 public:
  // Loads `library` (default libnvidia-ml.so.1), resolves the entry points,
  // calls nvmlInit_v2 and takes the handle of the device on PCI bus `pci_bus_id`
  // (as CUDA reports it; CUDA's and NVML's device orders may differ), or of
  // NVML's device `index` when pci_bus_id is "". Never throws; check ok().
  explicit Nvml(int index, const std::string& pci_bus_id = "", const std::string& library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool ok() const { return device_ != nullptr; }
  // Why it is not ok (one line, e.g. "libnvidia-ml.so.1: cannot open shared
  // object file"), "" when ok.
  const std::string& why() const { return why_; }
  // One sample; false when !ok(). Figures a device does not support stay -1;
  // so do those whose call fails otherwise, and then *error (when given) is
  // the first such call's message ("" when none failed).
  bool sample(NvmlSample* out, std::string* error = nullptr) const;

 private:
  using Fn = void (*)();
  // The status of an NVML call's return code `rc`, in NVML's words (nvmlErrorString).
  GpuStatus status(int rc, const GpuCallSite& site) const;

  void* lib_ = nullptr;
  void* device_ = nullptr;
  bool inited_ = false;
  std::string why_;
  Fn shutdown_ = nullptr, util_ = nullptr, clock_ = nullptr, power_ = nullptr, pcie_ = nullptr,
     error_string_ = nullptr;
};

}  // namespace fleetsim::validate
