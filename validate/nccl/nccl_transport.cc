// NcclTransport (see nccl_transport.h). Every CUDA and NCCL call is checked
// (gpu_check.h): setup failures become why(), a failed collective is reported
// and returns false (the watchdog then ends the process, as in PyTorch), a
// failed kernel launch aborts the rank, and teardown failures are logged.
#include "validate/nccl/nccl_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>

#include "validate/nccl/gpu_check.h"
#include "validate/nccl/kernels.h"
#include "validate/runner_common.h"

namespace fleetsim::validate {

NcclTransport::NcclTransport(const Plan& plan, int rank, int device)
    : plan_(plan), rank_(rank), device_(device), prefix_("[rank " + std::to_string(rank) + "] ") {
  comms_.fill(nullptr);
  ncclUniqueId id{};
  setup_device(rank == 0 ? &id : nullptr);
  // Every rank must agree before NCCL's init, which would wait for a rank that failed.
  int good = why_.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!good) {
    fail("another rank failed to set up its GPU");
    return;
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (!setup_comms(id)) return;
  MPI_Comm_dup(MPI_COMM_WORLD, &store_comm_);
  char bus[32] = {0};
  if (!FLEETSIM_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, device)).warn(prefix_))
    bus[0] = '\0';  // NVML then takes the device by its index
  nvml_ = std::make_unique<Nvml>(device, bus);
  if (!nvml_->ok())
    std::fprintf(stderr, "[rank %d] NVML unavailable (%s): telemetry's gpu_util is the runner's own busy accounting\n",
                 rank, nvml_->why().c_str());
  ok_ = true;
}

void NcclTransport::fail(const std::string& why) {
  if (why_.empty()) why_ = why;
}

bool NcclTransport::need(const GpuStatus& s) {
  if (!s.ok()) fail(s.message());
  return s.ok();
}

bool NcclTransport::report(const GpuStatus& s) const {
  if (!s.ok()) std::fprintf(stderr, "%serror: %s\n", prefix_.c_str(), s.message().c_str());
  return s.ok();
}

void NcclTransport::setup_device(ncclUniqueId* id) {
  if (!need(FLEETSIM_CUDA(cudaSetDevice(device_)))) return;
  if (need(FLEETSIM_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device_))))
    sms_ = std::max(sms_, 1);
  if (!need(FLEETSIM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)))) stream_ = nullptr;
  if (!need(FLEETSIM_CUDA(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming)))) done_ = nullptr;
  buffers_ = std::make_unique<DeviceBuffers>(plan_max_bytes(plan_), plan_.ranks);
  if (!buffers_->ok()) fail("the collective buffers: " + buffers_->why());
  void* host = nullptr;
  if (need(FLEETSIM_CUDA(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped)))) {
    abort_host_ = static_cast<volatile int*>(host);
    *abort_host_ = 0;
    void* dev = nullptr;
    if (need(FLEETSIM_CUDA(cudaHostGetDevicePointer(&dev, host, 0)))) abort_dev_ = static_cast<int*>(dev);
  }
  if (need(FLEETSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&peer_flag_), sizeof(int))))) {
    need(FLEETSIM_CUDA(cudaMemset(peer_flag_, 0, sizeof(int))));
  } else {
    peer_flag_ = nullptr;
  }
  if (id != nullptr && why_.empty()) need(FLEETSIM_NCCL(ncclGetUniqueId(id)));
}

bool NcclTransport::setup_comms(const ncclUniqueId& id) {
  if (!need(FLEETSIM_NCCL(ncclCommInitRank(&world_, plan_.ranks, id, rank_)))) {
    world_ = nullptr;
    return false;
  }
  for (int g = 0; g < kGroupKinds; ++g) {  // every rank splits for every group kind, in the same order
    const auto kind = static_cast<GroupKind>(g);
    if (!plan_.group_exists(kind)) continue;
    ncclComm_t& comm = comms_[static_cast<size_t>(g)];
    if (GpuStatus s = FLEETSIM_NCCL(ncclCommSplit(world_, plan_.group_instance(kind, rank_),
                                                  plan_.group_index(kind, rank_), &comm, nullptr));
        !s.ok()) {
      comm = nullptr;
      fail(std::string("the ") + group_name(kind) + " communicator: " + s.message());
      return false;
    }
  }
  return true;
}

NcclTransport::~NcclTransport() {
  if (!aborted_) {
    if (stream_) FLEETSIM_CUDA(cudaStreamSynchronize(stream_)).warn(prefix_);
    for (ncclComm_t& c : comms_)
      if (c) FLEETSIM_NCCL(ncclCommDestroy(c)).warn(prefix_);
    if (world_) FLEETSIM_NCCL(ncclCommDestroy(world_)).warn(prefix_);
  }
  buffers_.reset();
  if (peer_flag_) FLEETSIM_CUDA(cudaFree(peer_flag_)).warn(prefix_);
  if (abort_host_) FLEETSIM_CUDA(cudaFreeHost(const_cast<int*>(abort_host_))).warn(prefix_);
  if (done_) FLEETSIM_CUDA(cudaEventDestroy(done_)).warn(prefix_);
  if (stream_) FLEETSIM_CUDA(cudaStreamDestroy(stream_)).warn(prefix_);
  if (store_comm_ != MPI_COMM_NULL) MPI_Comm_free(&store_comm_);
}

void NcclTransport::world_barrier() {
  FLEETSIM_CUDA(cudaStreamSynchronize(stream_)).or_abort(prefix_);  // a broken device before every rank's barrier
  MPI_Barrier(MPI_COMM_WORLD);
}

void NcclTransport::store_barrier() {
  MPI_Request req;
  MPI_Ibarrier(store_comm_, &req);
  for (int done = 0; !done && !aborted_;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
}

bool NcclTransport::wait_event() {
  if (!report(FLEETSIM_CUDA(cudaEventRecord(done_, stream_)))) return false;
  in_flight_ = true;
  for (;;) {  // the CPU polls, as ProcessGroupNCCL's work.wait() / synchronize() would
    const GpuStatus q = FLEETSIM_CUDA(cudaEventQuery(done_));
    if (aborted_) return false;  // an aborted op "completes" when its kernel quits: it did not finish
    if (q.ok()) break;
    if (q.code() != cudaErrorNotReady) return report(q);  // in_flight_ stays: the watchdog sees the error
  }
  in_flight_ = false;
  return true;
}

void NcclTransport::compute(int64_t ns) {
  FLEETSIM_CUDA(gpu::launch_busy(ns, 2 * sms_, 256, stream_)).or_abort(prefix_);
  wait_event();
}

bool NcclTransport::collective(const WorkSpec& w) {
  const bool p2p = w.kind == OpKind::kSend || w.kind == OpKind::kRecv;
  ncclComm_t comm = p2p ? world_ : comms_[static_cast<size_t>(w.group)];
  if (!comm || aborted_) return false;
  if (!report(post_nccl(w.kind, w.bytes, comm, w.members, w.root, w.peer, *buffers_, stream_))) return false;
  return wait_event();
}

void NcclTransport::spin_on_missing_peer() {
  FLEETSIM_CUDA(gpu::launch_wait_for_peer(peer_flag_, abort_dev_, std::min(sms_, 32), stream_)).or_abort(prefix_);
  wait_event();  // returns once abort() has set the flag the kernel polls
}

std::string NcclTransport::async_error() {
  if (aborted_) return "";
  // This is the watchdog thread: make the device current here too.
  if (const GpuStatus s = FLEETSIM_CUDA(cudaSetDevice(device_)); !s.ok()) return s.message();
  auto check = [](ncclComm_t c, const char* what) -> std::string {
    ncclResult_t r = ncclSuccess;
    if (!c) return "";
    if (const GpuStatus s = FLEETSIM_NCCL(ncclCommGetAsyncError(c, &r)); !s.ok())
      return std::string("on ") + what + ": " + s.message();
    if (r == ncclSuccess || r == ncclInProgress) return "";
    return std::string("ncclCommGetAsyncError on ") + what + ": " + nccl_error(r);
  };
  if (std::string e = check(world_, "world"); !e.empty()) return e;
  for (int g = 0; g < kGroupKinds; ++g)
    if (std::string e = check(comms_[static_cast<size_t>(g)], group_name(static_cast<GroupKind>(g))); !e.empty())
      return e;
  if (in_flight_) {  // a kernel that faulted leaves a sticky error on the event
    const GpuStatus q = FLEETSIM_CUDA(cudaEventQuery(done_));
    if (!q.ok() && q.code() != cudaErrorNotReady) return q.message();
  }
  return "";
}

void NcclTransport::abort() {
  aborted_ = true;
  if (abort_host_) *abort_host_ = 1;  // the spinning kernel polls this, as NCCL's kernels poll their abort flag
  FLEETSIM_CUDA(cudaSetDevice(device_)).warn(prefix_);  // the abort goes on: it must return
  for (ncclComm_t c : comms_)
    if (c) FLEETSIM_NCCL(ncclCommAbort(c)).warn(prefix_);
  if (world_) FLEETSIM_NCCL(ncclCommAbort(world_)).warn(prefix_);
}

bool NcclTransport::sample_device(DeviceSample* out) {
  NvmlSample s;
  std::string error;
  if (!nvml_ || !nvml_->sample(&s, &error)) return false;
  if (error != nvml_error_ && !error.empty())  // once per new error, not every period
    std::fprintf(stderr, "%swarning: %s (that figure is left out)\n", prefix_.c_str(), error.c_str());
  nvml_error_ = error;
  out->util_gpu_pct = s.util_gpu_pct;
  out->sm_clock_mhz = s.sm_clock_mhz;
  out->power_w = s.power_w;
  out->pcie_tx_kBps = s.pcie_tx_kBps;
  out->pcie_rx_kBps = s.pcie_rx_kBps;
  return true;
}

}  // namespace fleetsim::validate
