// The single-GPU checks (see selftest.h). Every CUDA and NCCL call is checked
// (gpu_check.h): a failure prints "  error: file:line: call: ..." and fails the
// self-test; one that leaves nothing to measure ends it (exit 3).
#include "validate/nccl/selftest.h"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "validate/nccl/gpu_check.h"
#include "validate/nccl/kernels.h"
#include "validate/nccl/nccl_ops.h"
#include "validate/nccl/nvml.h"

namespace fleetsim::validate {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The device and what every check shares; `all` turns false at the first failed call.
struct Gpu {
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  std::string bus;  // PCI bus id, as CUDA writes it ("" when unknown)
  int blocks = 1;
  bool all = true;

  // Prints a failed call and fails the self-test; returns ok().
  bool check(const GpuStatus& s) {
    if (s.ok()) return true;
    std::printf("  error: %s\n", s.message().c_str());
    all = false;
    return false;
  }
  // Milliseconds between events a and b (after b completed); -1 on an error.
  float elapsed_ms() {
    float ms = 0;
    return check(FLEETSIM_CUDA(cudaEventSynchronize(b))) && check(FLEETSIM_CUDA(cudaEventElapsedTime(&ms, a, b)))
               ? ms
               : -1.0f;
  }
};

// NVML's utilization.gpu every 100 ms for `seconds`; prints them, returns the max.
double watch_nvml(const Nvml& nvml, double seconds, const char* what) {
  std::printf("  nvml %-28s", what);
  double peak = -1;
  std::string error;
  for (double end = now_s() + seconds; now_s() < end;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    NvmlSample s;
    std::string e;
    if (!nvml.sample(&s, &e)) break;
    if (error.empty()) error = e;
    std::printf(" %.0f%%", s.util_gpu_pct);
    peak = std::max(peak, s.util_gpu_pct);
  }
  std::printf("\n");
  if (!error.empty()) std::printf("  nvml error: %s\n", error.c_str());
  return peak;
}

// The device's line and the stream and events; false when they cannot be had.
bool open_device(Gpu& g) {
  if (!g.check(FLEETSIM_CUDA(cudaSetDevice(g.device))) ||
      !g.check(FLEETSIM_CUDA(cudaGetDeviceProperties(&g.prop, g.device))))
    return false;
  char bus[32] = {0};
  if (g.check(FLEETSIM_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, g.device)))) g.bus = bus;
  int version = 0;
  if (!g.check(FLEETSIM_NCCL(ncclGetVersion(&version)))) version = 0;
  std::printf("device     %d: %s, sm_%d%d, %d SMs, PCI %s; NCCL %d\n", g.device, g.prop.name, g.prop.major,
              g.prop.minor, g.prop.multiProcessorCount, g.bus.c_str(), version);
  g.blocks = 2 * g.prop.multiProcessorCount;
  return g.check(FLEETSIM_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking))) &&
         g.check(FLEETSIM_CUDA(cudaEventCreate(&g.a))) && g.check(FLEETSIM_CUDA(cudaEventCreate(&g.b)));
}

// 1. Compute calibration: what the busy kernel asked for against what it took.
// False when the kernel cannot run.
bool check_compute(Gpu& g) {
  if (!g.check(FLEETSIM_CUDA(gpu::launch_busy(1'000'000, g.blocks, 256, g.stream))) ||  // warm-up (module load)
      !g.check(FLEETSIM_CUDA(cudaStreamSynchronize(g.stream))))
    return false;
  std::printf("compute    busy kernel on %d blocks x 256 threads: requested vs measured (median of 5)\n", g.blocks);
  std::printf("  %12s %14s %12s %14s %8s\n", "requested_ms", "gpu_events_ms", "err%", "host_wall_ms", "err%");
  for (double req_ms : {0.05, 0.2, 1.0, 5.0, 20.0, 100.0}) {
    std::vector<double> ev, host;
    for (int i = 0; i < 5; ++i) {
      const double t0 = now_s();
      if (!g.check(FLEETSIM_CUDA(cudaEventRecord(g.a, g.stream))) ||
          !g.check(FLEETSIM_CUDA(gpu::launch_busy(static_cast<int64_t>(req_ms * 1e6), g.blocks, 256, g.stream))) ||
          !g.check(FLEETSIM_CUDA(cudaEventRecord(g.b, g.stream))))
        return false;
      const float ms = g.elapsed_ms();
      if (ms < 0) return false;
      host.push_back((now_s() - t0) * 1e3);
      ev.push_back(ms);
    }
    std::sort(ev.begin(), ev.end());
    std::sort(host.begin(), host.end());
    std::printf("  %12.3f %14.4f %+12.2f %14.4f %+8.2f\n", req_ms, ev[2], (ev[2] - req_ms) / req_ms * 100, host[2],
                (host[2] - req_ms) / req_ms * 100);
  }
  return true;
}

// The allreduce time per op on a one-rank communicator, per size (launch cost only).
void time_one_rank_allreduce(Gpu& g, ncclComm_t comm) {
  DeviceBuffers buf(int64_t{64} << 20, 1);
  if (!buf.ok()) {
    std::printf("  error: the buffers: %s\n", buf.why().c_str());
    g.all = false;
    return;
  }
  std::printf("nccl       one-rank communicator: allreduce time per op (avg of 20 after 5 warm-up)\n");
  std::printf("  %12s %12s\n", "bytes", "time_us");
  for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 16) {
    bool posted = true;
    for (int i = 0; i < 5 && posted; ++i)
      posted = g.check(post_nccl(OpKind::kAllReduce, bytes, comm, 1, 0, -1, buf, g.stream));
    posted = posted && g.check(FLEETSIM_CUDA(cudaEventRecord(g.a, g.stream)));
    for (int i = 0; i < 20 && posted; ++i)
      posted = g.check(post_nccl(OpKind::kAllReduce, bytes, comm, 1, 0, -1, buf, g.stream));
    posted = posted && g.check(FLEETSIM_CUDA(cudaEventRecord(g.b, g.stream)));
    const float ms = posted ? g.elapsed_ms() : -1.0f;
    if (ms < 0) {
      std::printf("  %12lld failed\n", static_cast<long long>(bytes));
      return;
    }
    std::printf("  %12lld %12.2f\n", static_cast<long long>(bytes), ms * 1e3 / 20);
  }
}

// 2. A one-rank communicator: every collective completes at once.
void check_nccl(Gpu& g) {
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  if (!g.check(FLEETSIM_NCCL(ncclGetUniqueId(&id))) || !g.check(FLEETSIM_NCCL(ncclCommInitRank(&comm, 1, id, 0)))) {
    std::printf("nccl       one-rank communicator: could not be made\n");
    return;
  }
  time_one_rank_allreduce(g, comm);
  g.check(FLEETSIM_NCCL(ncclCommDestroy(comm)));
}

// 3. NVML idle, then under a 1.5 s busy kernel.
void check_nvml(Gpu& g, const Nvml& nvml) {
  if (!nvml.ok()) return;
  watch_nvml(nvml, 0.8, "idle:");
  if (!g.check(FLEETSIM_CUDA(gpu::launch_busy(1'500'000'000, g.blocks, 256, g.stream)))) return;
  const double peak = watch_nvml(nvml, 1.2, "busy kernel (1.5 s):");
  g.check(FLEETSIM_CUDA(cudaStreamSynchronize(g.stream)));
  std::printf("  busy kernel: NVML peak utilization.gpu %.0f%%\n", peak);
}

// 4. The spin: a kernel polling a device flag that no peer sets, with a watchdog
//    thread as ProcessGroupNCCL's: it polls the kernel's event (cudaEventQuery)
//    and NVML every 100 ms, times out after 3 s, sets the abort flag the kernel
//    polls and calls ncclCommAbort.
struct Spin {
  int* peer_flag = nullptr;  // device memory nobody writes
  void* host = nullptr;      // the abort flag, mapped host memory ...
  void* dev_abort = nullptr;  // ... and its device address
  ncclComm_t comm = nullptr;  // a one-rank communicator to abort (none if it cannot be made)
  cudaEvent_t spun = nullptr;
  std::atomic<double> t_abort{0};
  std::atomic<bool> timed_out{false};
  double peak = -1;       // NVML's peak while spinning (the watchdog thread's, read after join)
  std::string error;      // the watchdog thread's failed call, if any
  std::string nvml_error;  // its first NVML sampling error, if any
};

bool setup_spin(Gpu& g, Spin& s) {
  if (!g.check(FLEETSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&s.peer_flag), sizeof(int)))) ||
      !g.check(FLEETSIM_CUDA(cudaMemset(s.peer_flag, 0, sizeof(int)))) ||
      !g.check(FLEETSIM_CUDA(cudaHostAlloc(&s.host, sizeof(int), cudaHostAllocMapped))) ||
      !g.check(FLEETSIM_CUDA(cudaHostGetDevicePointer(&s.dev_abort, s.host, 0))) ||
      !g.check(FLEETSIM_CUDA(cudaEventCreateWithFlags(&s.spun, cudaEventDisableTiming))))
    return false;
  *static_cast<volatile int*>(s.host) = 0;
  ncclUniqueId id{};
  if (!g.check(FLEETSIM_NCCL(ncclGetUniqueId(&id))) || !g.check(FLEETSIM_NCCL(ncclCommInitRank(&s.comm, 1, id, 0))))
    s.comm = nullptr;  // the spin still runs, with the flag alone
  return g.check(FLEETSIM_CUDA(cudaDeviceSynchronize()));
}

// The watchdog thread's loop (see Spin).
void spin_watchdog(const Gpu& g, const Nvml& nvml, Spin& s, double t_start) {
  if (const GpuStatus d = FLEETSIM_CUDA(cudaSetDevice(g.device)); !d.ok()) s.error = d.message();
  std::printf("  nvml utilization.gpu every 100 ms:");
  for (;;) {
    const GpuStatus q = FLEETSIM_CUDA(cudaEventQuery(s.spun));
    if (q.code() != cudaErrorNotReady) {
      if (!q.ok() && s.error.empty()) s.error = q.message();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    NvmlSample n;
    std::string e;
    if (nvml.sample(&n, &e)) {
      if (s.nvml_error.empty()) s.nvml_error = e;
      std::printf(" %.0f", n.util_gpu_pct);
      s.peak = std::max(s.peak, n.util_gpu_pct);
    }
    const double ran = now_s() - t_start;
    if (ran < 3.0) continue;
    std::printf("\n  watchdog: collective operation timeout: the spin ran for %.0f milliseconds before timing out "
                "(Timeout(ms)=3000); aborting\n", ran * 1e3);
    s.t_abort = now_s();
    s.timed_out = true;  // after t_abort: the main thread reads them in this order
    *static_cast<volatile int*>(s.host) = 1;  // the flag NCCL's kernels poll; then the communicator abort
    if (s.comm) {
      const GpuStatus r = FLEETSIM_NCCL(ncclCommAbort(s.comm));
      std::printf("  ncclCommAbort: %s (%.2f ms)\n", r.ok() ? "no error" : r.message().c_str(),
                  (now_s() - s.t_abort) * 1e3);
      if (!r.ok() && s.error.empty()) s.error = r.message();
      s.comm = nullptr;  // an aborted communicator is freed
    }
    return;
  }
}

// Runs the spin; 3 when the kernel cannot be started or does not end after the abort.
int check_spin(Gpu& g, const Nvml& nvml) {
  Spin s;
  if (!setup_spin(g, s)) {
    std::printf("spin       cannot allocate the flags\n");
    return 3;
  }
  const int spin_blocks = std::min(g.prop.multiProcessorCount, 32);
  if (!g.check(FLEETSIM_CUDA(gpu::launch_wait_for_peer(s.peer_flag, static_cast<int*>(s.dev_abort), spin_blocks,
                                                       g.stream))) ||
      !g.check(FLEETSIM_CUDA(cudaEventRecord(s.spun, g.stream)))) {
    std::printf("spin       the kernel cannot be started\n");
    return 3;
  }
  const double t_start = now_s();
  std::printf("spin       kernel waiting for a peer's flag that never comes (%d blocks); watchdog timeout 3 s\n",
              spin_blocks);
  std::thread watchdog([&] { spin_watchdog(g, nvml, s, t_start); });
  // The main thread waits, as work.wait() does; at most 10 s past the abort.
  bool ended = true;
  std::string wait_error;
  for (;;) {
    const GpuStatus q = FLEETSIM_CUDA(cudaEventQuery(s.spun));
    if (q.code() != cudaErrorNotReady) {
      if (!q.ok()) wait_error = q.message();
      break;
    }
    if (s.timed_out && now_s() - s.t_abort > 10.0) {
      ended = false;
      break;
    }
    std::this_thread::yield();
  }
  const double t_end = now_s();
  watchdog.join();
  if (!ended) {
    std::printf("  the kernel did NOT end within 10 s of the abort; exiting (process exit ends it)\n");
    std::fflush(stdout);
    std::_Exit(3);
  }
  for (const std::string& e : {s.error, wait_error})
    if (!e.empty()) std::printf("  error: %s\n", e.c_str());
  const GpuStatus last = FLEETSIM_CUDA(cudaGetLastError());
  if (!s.nvml_error.empty()) std::printf("  nvml error: %s\n", s.nvml_error.c_str());
  if (nvml.ok()) std::printf("  nvml peak utilization.gpu while spinning: %.0f%%\n", s.peak);
  std::printf("  the kernel ended %.2f ms after the abort (%s); the process goes on\n",
              s.timed_out ? (t_end - s.t_abort) * 1e3 : -1.0, last.ok() ? "no error" : last.message().c_str());
  g.all = g.all && s.timed_out && last.ok() && s.error.empty() && wait_error.empty() && (!nvml.ok() || s.peak >= 90);
  if (s.comm) g.check(FLEETSIM_NCCL(ncclCommDestroy(s.comm)));
  g.check(FLEETSIM_CUDA(cudaEventDestroy(s.spun)));
  g.check(FLEETSIM_CUDA(cudaFree(s.peer_flag)));
  g.check(FLEETSIM_CUDA(cudaFreeHost(s.host)));
  return 0;
}

}  // namespace

int run_selftest(int device) {
  Gpu g;
  g.device = device;
  if (!open_device(g)) {
    std::printf("selftest   FAILED (the device cannot be used)\n");
    return 3;
  }
  Nvml nvml(device, g.bus);
  std::printf("nvml       %s\n", nvml.ok() ? "loaded (libnvidia-ml.so.1)" : ("unavailable: " + nvml.why()).c_str());
  if (!check_compute(g)) return 3;
  check_nccl(g);
  check_nvml(g, nvml);
  if (const int spin = check_spin(g, nvml); spin != 0) return spin;
  g.check(FLEETSIM_CUDA(cudaEventDestroy(g.a)));
  g.check(FLEETSIM_CUDA(cudaEventDestroy(g.b)));
  g.check(FLEETSIM_CUDA(cudaStreamDestroy(g.stream)));
  std::printf("selftest   %s\n", g.all ? "ok" : "FAILED");
  return g.all ? 0 : 3;
}

}  // namespace fleetsim::validate
