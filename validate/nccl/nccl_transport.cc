// NcclTransport (see nccl_transport.h).
#include "validate/nccl/nccl_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>

#include "validate/runner_common.h"
#include "validate/nccl/kernels.h"

namespace fleetsim::validate {

namespace {
std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorString(e) + " (" + std::to_string(static_cast<int>(e)) + ")";
}
}  // namespace

NcclTransport::NcclTransport(const Plan& plan, int rank, int device) : plan_(plan), rank_(rank), device_(device) {
  comms_.fill(nullptr);
  auto fail = [this](const std::string& w) {
    if (why_.empty()) why_ = w;
  };
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) fail(cuda_error("cudaSetDevice", e));
  if (why_.empty()) {
    cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device);
    sms_ = std::max(sms_, 1);
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); e != cudaSuccess)
      fail(cuda_error("cudaStreamCreate", e));
    if (cudaError_t e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming); e != cudaSuccess)
      fail(cuda_error("cudaEventCreate", e));
    buffers_ = std::make_unique<DeviceBuffers>(plan_max_bytes(plan), plan.ranks);
    if (!buffers_->ok()) fail("cudaMalloc of the collective buffers failed");
    void* host = nullptr;
    if (cudaError_t e = cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped); e != cudaSuccess) {
      fail(cuda_error("cudaHostAlloc", e));
    } else {
      abort_host_ = static_cast<volatile int*>(host);
      *abort_host_ = 0;
      void* dev = nullptr;
      cudaHostGetDevicePointer(&dev, host, 0);
      abort_dev_ = static_cast<int*>(dev);
    }
    if (cudaMalloc(reinterpret_cast<void**>(&peer_flag_), sizeof(int)) == cudaSuccess) {
      cudaMemset(peer_flag_, 0, sizeof(int));
    } else {
      fail("cudaMalloc of the peer flag failed");
    }
  }
  // Every rank must agree before NCCL's init, which would wait for a rank that failed.
  int good = why_.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!good) {
    fail("another rank failed to set up its GPU");
    return;
  }
  ncclUniqueId id{};
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (ncclResult_t r = ncclCommInitRank(&world_, plan.ranks, id, rank); r != ncclSuccess) {
    fail("ncclCommInitRank: " + nccl_error(r));
    return;
  }
  for (int g = 0; g < kGroupKinds; ++g) {  // every rank splits for every group kind, in the same order
    const auto kind = static_cast<GroupKind>(g);
    if (!plan.group_exists(kind)) continue;
    if (ncclResult_t r = ncclCommSplit(world_, plan.group_instance(kind, rank), plan.group_index(kind, rank),
                                       &comms_[static_cast<size_t>(g)], nullptr);
        r != ncclSuccess) {
      fail(std::string("ncclCommSplit(") + group_name(kind) + "): " + nccl_error(r));
      return;
    }
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &store_comm_);
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  nvml_ = std::make_unique<Nvml>(device, bus);
  if (!nvml_->ok())
    std::fprintf(stderr, "[rank %d] NVML unavailable (%s): telemetry's gpu_util is the runner's own busy accounting\n",
                 rank, nvml_->why().c_str());
  ok_ = true;
}

NcclTransport::~NcclTransport() {
  if (!aborted_) {
    if (stream_) cudaStreamSynchronize(stream_);
    for (ncclComm_t& c : comms_)
      if (c) ncclCommDestroy(c);
    if (world_) ncclCommDestroy(world_);
  }
  buffers_.reset();
  if (peer_flag_) cudaFree(peer_flag_);
  if (abort_host_) cudaFreeHost(const_cast<int*>(abort_host_));
  if (done_) cudaEventDestroy(done_);
  if (stream_) cudaStreamDestroy(stream_);
  if (store_comm_ != MPI_COMM_NULL) MPI_Comm_free(&store_comm_);
}

void NcclTransport::world_barrier() {
  cudaStreamSynchronize(stream_);
  MPI_Barrier(MPI_COMM_WORLD);
}

void NcclTransport::store_barrier() {
  MPI_Request req;
  MPI_Ibarrier(store_comm_, &req);
  for (int done = 0; !done && !aborted_;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
}

bool NcclTransport::wait_event() {
  if (cudaEventRecord(done_, stream_) != cudaSuccess) return false;
  in_flight_ = true;
  for (;;) {  // the CPU polls, as ProcessGroupNCCL's work.wait() / synchronize() would
    const cudaError_t e = cudaEventQuery(done_);
    if (aborted_) return false;  // an aborted op "completes" when its kernel quits: it did not finish
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) return false;  // in_flight_ stays: the watchdog sees the error
  }
  in_flight_ = false;
  return true;
}

void NcclTransport::compute(int64_t ns) {
  if (gpu::launch_busy(ns, 2 * sms_, 256, stream_) != cudaSuccess) return;
  wait_event();
}

bool NcclTransport::collective(const WorkSpec& w) {
  const bool p2p = w.kind == OpKind::kSend || w.kind == OpKind::kRecv;
  ncclComm_t comm = p2p ? world_ : comms_[static_cast<size_t>(w.group)];
  if (!comm || aborted_) return false;
  if (post_nccl(w.kind, w.bytes, comm, w.members, w.root, w.peer, *buffers_, stream_) != ncclSuccess) return false;
  return wait_event();
}

void NcclTransport::spin_on_missing_peer() {
  if (gpu::launch_wait_for_peer(peer_flag_, abort_dev_, std::min(sms_, 32), stream_) != cudaSuccess) return;
  wait_event();  // returns once abort() has set the flag the kernel polls
}

std::string NcclTransport::async_error() {
  if (aborted_) return "";
  cudaSetDevice(device_);  // this is the watchdog thread: make the device current here too
  auto check = [](ncclComm_t c, const char* what) -> std::string {
    ncclResult_t r = ncclSuccess;
    if (!c || ncclCommGetAsyncError(c, &r) != ncclSuccess) return "";
    if (r == ncclSuccess || r == ncclInProgress) return "";
    return std::string("ncclCommGetAsyncError on ") + what + ": " + nccl_error(r);
  };
  if (std::string e = check(world_, "world"); !e.empty()) return e;
  for (int g = 0; g < kGroupKinds; ++g)
    if (std::string e = check(comms_[static_cast<size_t>(g)], group_name(static_cast<GroupKind>(g))); !e.empty())
      return e;
  if (in_flight_) {  // a kernel that faulted leaves a sticky error on the event
    const cudaError_t e = cudaEventQuery(done_);
    if (e != cudaSuccess && e != cudaErrorNotReady) return cuda_error("cudaEventQuery", e);
  }
  return "";
}

void NcclTransport::abort() {
  aborted_ = true;
  if (abort_host_) *abort_host_ = 1;  // the spinning kernel polls this, as NCCL's kernels poll their abort flag
  cudaSetDevice(device_);
  for (ncclComm_t c : comms_)
    if (c) ncclCommAbort(c);
  if (world_) ncclCommAbort(world_);
}

bool NcclTransport::sample_device(DeviceSample* out) {
  NvmlSample s;
  if (!nvml_ || !nvml_->sample(&s)) return false;
  out->util_gpu_pct = s.util_gpu_pct;
  out->sm_clock_mhz = s.sm_clock_mhz;
  out->power_w = s.power_w;
  out->pcie_tx_kBps = s.pcie_tx_kBps;
  out->pcie_rx_kBps = s.pcie_rx_kBps;
  return true;
}

}  // namespace fleetsim::validate
