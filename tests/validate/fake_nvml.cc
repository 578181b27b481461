// A stand-in for libnvidia-ml.so.1 with NVML's C entry points and ABI (int
// return codes, an opaque device pointer), returning fixed figures, so the
// NVML loader's present path is tested on machines without a driver. The
// environment variable FAKE_NVML_FAIL_INIT=1 makes nvmlInit_v2 fail (code 9,
// as NVML_ERROR_DRIVER_NOT_LOADED). Device 0 only; no PCIe figures (it reports
// "not supported", code 3).
#include <cstdlib>
#include <cstring>

namespace {
int g_device;  // its address is the device handle
}

extern "C" {

struct FakeUtilization {
  unsigned int gpu, memory;
};

int nvmlInit_v2() {
  const char* f = std::getenv("FAKE_NVML_FAIL_INIT");
  return f && std::strcmp(f, "1") == 0 ? 9 : 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_device;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** device) {
  if (std::strcmp(bus, "00000000:00:01.0") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *device = &g_device;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* u) {
  if (device != &g_device) return 2;
  u->gpu = 100;
  u->memory = 0;
  return 0;
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  if (device != &g_device || type != 1) return 2;  // only NVML_CLOCK_SM is asked for
  *mhz = 1980;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned int* mw) {
  if (device != &g_device) return 2;
  *mw = 312500;
  return 0;
}
int nvmlDeviceGetPcieThroughput(void*, int, unsigned int*) { return 3; }

}  // extern "C"
