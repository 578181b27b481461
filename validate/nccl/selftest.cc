// The single-GPU checks (see selftest.h).
#include "validate/nccl/selftest.h"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "validate/nccl/kernels.h"
#include "validate/nccl/nccl_ops.h"
#include "validate/nccl/nvml.h"

namespace fleetsim::validate {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// NVML's utilization.gpu every 100 ms for `seconds`; prints them, returns the max.
double watch_nvml(const Nvml& nvml, double seconds, const char* what) {
  std::printf("  nvml %-28s", what);
  double peak = -1;
  for (double end = now_s() + seconds; now_s() < end;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    NvmlSample s;
    if (!nvml.sample(&s)) break;
    std::printf(" %.0f%%", s.util_gpu_pct);
    peak = std::max(peak, s.util_gpu_pct);
  }
  std::printf("\n");
  return peak;
}

}  // namespace

int run_selftest(int device) {
  bool all = true;
  cudaSetDevice(device);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  int version = 0;
  ncclGetVersion(&version);
  std::printf("device     %d: %s, sm_%d%d, %d SMs, PCI %s; NCCL %d\n", device, prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, bus, version);
  Nvml nvml(device, bus);
  std::printf("nvml       %s\n", nvml.ok() ? "loaded (libnvidia-ml.so.1)" : ("unavailable: " + nvml.why()).c_str());

  // 1. Compute calibration: what the busy kernel asked for against what it took.
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const int blocks = 2 * prop.multiProcessorCount;
  gpu::launch_busy(1'000'000, blocks, 256, stream);  // warm-up (module load)
  cudaStreamSynchronize(stream);
  std::printf("compute    busy kernel on %d blocks x 256 threads: requested vs measured (median of 5)\n", blocks);
  std::printf("  %12s %14s %12s %14s %8s\n", "requested_ms", "gpu_events_ms", "err%", "host_wall_ms", "err%");
  for (double req_ms : {0.05, 0.2, 1.0, 5.0, 20.0, 100.0}) {
    std::vector<double> ev, host;
    for (int i = 0; i < 5; ++i) {
      const double t0 = now_s();
      cudaEventRecord(a, stream);
      const cudaError_t e = gpu::launch_busy(static_cast<int64_t>(req_ms * 1e6), blocks, 256, stream);
      cudaEventRecord(b, stream);
      if (e != cudaSuccess || cudaEventSynchronize(b) != cudaSuccess) {
        std::printf("  kernel failed: %s\n", cudaGetErrorString(e));
        return 3;
      }
      host.push_back((now_s() - t0) * 1e3);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      ev.push_back(ms);
    }
    std::sort(ev.begin(), ev.end());
    std::sort(host.begin(), host.end());
    std::printf("  %12.3f %14.4f %+12.2f %14.4f %+8.2f\n", req_ms, ev[2], (ev[2] - req_ms) / req_ms * 100, host[2],
                (host[2] - req_ms) / req_ms * 100);
  }

  // 2. A one-rank communicator: every collective completes at once (launch cost only).
  ncclUniqueId id{};
  ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0); r != ncclSuccess) {
    std::printf("nccl       one-rank communicator: %s\n", nccl_error(r).c_str());
    all = false;
  } else {
    DeviceBuffers buf(int64_t{64} << 20, 1);
    std::printf("nccl       one-rank communicator: allreduce time per op (avg of 20 after 5 warm-up)\n");
    std::printf("  %12s %12s\n", "bytes", "time_us");
    for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 16) {
      for (int i = 0; i < 5; ++i) post_nccl(OpKind::kAllReduce, bytes, comm, 1, 0, -1, buf, stream);
      cudaEventRecord(a, stream);
      ncclResult_t rc = ncclSuccess;
      for (int i = 0; i < 20 && rc == ncclSuccess; ++i)
        rc = post_nccl(OpKind::kAllReduce, bytes, comm, 1, 0, -1, buf, stream);
      cudaEventRecord(b, stream);
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      if (rc != ncclSuccess) {
        std::printf("  %12lld %s\n", static_cast<long long>(bytes), nccl_error(rc).c_str());
        all = false;
        break;
      }
      std::printf("  %12lld %12.2f\n", static_cast<long long>(bytes), ms * 1e3 / 20);
    }
    ncclCommDestroy(comm);
  }

  // 3. NVML idle, then under a 1.5 s busy kernel.
  if (nvml.ok()) {
    watch_nvml(nvml, 0.8, "idle:");
    gpu::launch_busy(1'500'000'000, blocks, 256, stream);
    const double peak = watch_nvml(nvml, 1.2, "busy kernel (1.5 s):");
    cudaStreamSynchronize(stream);
    std::printf("  busy kernel: NVML peak utilization.gpu %.0f%%\n", peak);
  }

  // 4. The spin: a kernel polling a device flag that no peer sets, with a
  //    watchdog thread as ProcessGroupNCCL's: it polls the kernel's event
  //    (cudaEventQuery) and NVML every 100 ms, times out after 3 s, sets the
  //    abort flag the kernel polls and calls ncclCommAbort.
  int* peer_flag = nullptr;
  void* host = nullptr;
  void* dev_abort = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&peer_flag), sizeof(int)) != cudaSuccess ||
      cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer(&dev_abort, host, 0) != cudaSuccess) {
    std::printf("spin       cannot allocate the flags\n");
    return 3;
  }
  cudaMemset(peer_flag, 0, sizeof(int));
  volatile int* abort_flag = static_cast<volatile int*>(host);
  *abort_flag = 0;
  ncclComm_t spin_comm = nullptr;
  ncclUniqueId spin_id{};
  ncclGetUniqueId(&spin_id);
  const bool have_comm = ncclCommInitRank(&spin_comm, 1, spin_id, 0) == ncclSuccess;
  cudaDeviceSynchronize();
  cudaEvent_t spun = nullptr;
  cudaEventCreateWithFlags(&spun, cudaEventDisableTiming);
  const int spin_blocks = std::min(prop.multiProcessorCount, 32);
  gpu::launch_wait_for_peer(peer_flag, static_cast<int*>(dev_abort), spin_blocks, stream);
  cudaEventRecord(spun, stream);
  const double t_start = now_s();
  std::printf("spin       kernel waiting for a peer's flag that never comes (%d blocks); watchdog timeout 3 s\n",
              spin_blocks);
  std::atomic<double> t_abort{0};
  std::atomic<bool> timed_out{false};
  double peak = -1;
  std::thread watchdog([&] {
    cudaSetDevice(device);
    std::printf("  nvml utilization.gpu every 100 ms:");
    while (cudaEventQuery(spun) == cudaErrorNotReady) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      NvmlSample s;
      if (nvml.sample(&s)) {
        std::printf(" %.0f", s.util_gpu_pct);
        peak = std::max(peak, s.util_gpu_pct);
      }
      const double ran = now_s() - t_start;
      if (ran >= 3.0) {
        std::printf("\n  watchdog: collective operation timeout: the spin ran for %.0f milliseconds before timing out "
                    "(Timeout(ms)=3000); aborting\n", ran * 1e3);
        t_abort = now_s();
        timed_out = true;  // after t_abort: the main thread reads them in this order
        *abort_flag = 1;  // the flag NCCL's kernels poll; then the communicator abort
        if (have_comm) {
          const ncclResult_t r = ncclCommAbort(spin_comm);
          std::printf("  ncclCommAbort: %s (%.2f ms)\n", ncclGetErrorString(r), (now_s() - t_abort) * 1e3);
        }
        break;
      }
    }
  });
  // The main thread waits, as work.wait() does; at most 10 s past the abort.
  bool ended = true;
  while (cudaEventQuery(spun) == cudaErrorNotReady) {
    if (timed_out && now_s() - t_abort > 10.0) {
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
  const cudaError_t e = cudaGetLastError();
  if (nvml.ok()) std::printf("  nvml peak utilization.gpu while spinning: %.0f%%\n", peak);
  std::printf("  the kernel ended %.2f ms after the abort (%s); the process goes on\n",
              timed_out ? (t_end - t_abort) * 1e3 : -1.0, cudaGetErrorString(e));
  all = all && timed_out && e == cudaSuccess && (!nvml.ok() || peak >= 90);
  cudaEventDestroy(spun);
  cudaFree(peer_flag);
  cudaFreeHost(host);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(stream);
  std::printf("selftest   %s\n", all ? "ok" : "FAILED");
  return all ? 0 : 3;
}

}  // namespace fleetsim::validate
