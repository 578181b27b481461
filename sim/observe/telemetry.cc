// Telemetry sampling: time in each GPU state is accrued per period and turned
// into nvidia-smi utilization (any kernel resident) and DCGM SM/tensor activity.
// NIC bytes accrue linearly over a transfer's window and stay flat while spinning.
#include "sim/observe/telemetry.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "fleetsim/record.h"

namespace fleetsim {

Telemetry::Telemetry(const Plan& plan, std::vector<int> ranks, std::FILE* out, ActivityModel m)
    : plan_(plan), ranks_(std::move(ranks)), slot_(static_cast<size_t>(plan.ranks), -1), tracks_(ranks_.size()),
      out_(out), m_(m) {
  for (size_t i = 0; i < ranks_.size(); ++i) slot_[static_cast<size_t>(ranks_[i])] = static_cast<int32_t>(i);
  nccl_sm_ = std::min(1.0, static_cast<double>(m_.nccl_channels) / plan.scenario.fleet.sms_per_gpu);
  std::fputs(csv_header(columns::kTelemetry, columns::kTelemetrySim).c_str(), out_);
}

void Telemetry::accrue(RankTrack& k, SimTime t) const {
  const double dt = static_cast<double>((t - k.since).ns);
  switch (k.state) {
    case GpuState::kIdle: break;
    case GpuState::kCompute:
      k.busy_ns += dt;
      k.sm_ns += dt * m_.compute_sm_active;
      k.tensor_ns += dt * m_.compute_tensor_active;
      break;
    case GpuState::kSpin: case GpuState::kTransfer:
      k.busy_ns += dt;
      k.sm_ns += dt * nccl_sm_;
      break;
  }
  k.since = t;
}

void Telemetry::on_gpu_state(int rank, SimTime t, GpuState s, int64_t step) {
  const int32_t i = slot_[static_cast<size_t>(rank)];
  if (i < 0) return;
  RankTrack& k = tracks_[static_cast<size_t>(i)];
  if (k.dead) return;
  accrue(k, t);
  k.state = s;
  k.step = std::max(k.step, step);  // a late state change for an earlier op does not move the step back
}

void Telemetry::on_fault(int rank, SimTime t, const Fault& f) {
  const int32_t i = slot_[static_cast<size_t>(rank)];
  if (i < 0 || f.kind != FaultKind::kCrash) return;
  RankTrack& k = tracks_[static_cast<size_t>(i)];
  accrue(k, t);
  k.state = GpuState::kIdle;  // the process and its CUDA context are gone
  k.dead = true;
}

void Telemetry::on_transfer(const WorkRecord& w, SimTime begin, SimTime end, int64_t nic_bytes) {
  const int32_t i = slot_[static_cast<size_t>(w.rank)];
  if (i < 0) return;
  RankTrack& k = tracks_[static_cast<size_t>(i)];
  k.nic_done += k.xfer_bytes;  // a previous transfer has necessarily finished
  k.nvl_done += k.xfer_nvl_bytes;
  k.xfer_begin = begin;
  k.xfer_end = end;
  k.xfer_bytes = nic_bytes;
  k.xfer_nvl_bytes = nvlink_bytes(w, nic_bytes);
}

void Telemetry::emit(SimTime t, int64_t period_ns) {
  const double p = static_cast<double>(period_ns);
  for (size_t i = 0; i < tracks_.size(); ++i) {
    RankTrack& k = tracks_[i];
    accrue(k, t);
    // Bytes of the transfer in flight accrue linearly over its window.
    const int64_t span = (k.xfer_end - k.xfer_begin).ns;
    const int64_t done = std::clamp<int64_t>((t - k.xfer_begin).ns, 0, span);
    auto so_far = [&](int64_t bytes) {
      return span > 0 ? static_cast<int64_t>(static_cast<long double>(bytes) * done / span) : bytes;
    };
    const int64_t nic = k.nic_done + so_far(k.xfer_bytes), nvl = k.nvl_done + so_far(k.xfer_nvl_bytes);
    const auto util = static_cast<int>(std::lround(std::min(1.0, k.busy_ns / p) * 100.0));
    std::fprintf(out_, "%s,%d,%d,%.3f,%.3f,%" PRId64 ",%" PRId64 ",%" PRId64 "\n", format_seconds(t.ns).c_str(),
                 ranks_[i], util, std::min(1.0, k.sm_ns / p), std::min(1.0, k.tensor_ns / p), nic, k.step, nvl);
    k.busy_ns = k.sm_ns = k.tensor_ns = 0;
  }
}

// What `w`'s member sends over NVLink: its ring share of the collective less what
// leaves through the NICs; a send to a GPU on the same node; nothing for a recv.
int64_t Telemetry::nvlink_bytes(const WorkRecord& w, int64_t nic_bytes) const {
  const OpKind kind = plan_.ops[w.op].kind;
  if (kind == OpKind::kRecv) return 0;
  const int gpn = plan_.scenario.fleet.gpus_per_node;
  if (kind == OpKind::kSend) return w.peer / gpn == w.rank / gpn ? w.bytes : 0;
  const auto sent = static_cast<int64_t>(ring_bytes_sent_per_rank(kind, w.bytes, plan_.group_size(w.group)));
  return std::max<int64_t>(0, sent - nic_bytes);
}

void Telemetry::on_tick(SimTime t) {
  emit(t, (t - last_tick_).ns);
  last_tick_ = t;
}

void Telemetry::on_end(SimTime t, Outcome) {
  if (t > last_tick_) emit(t, (t - last_tick_).ns);
  std::fflush(out_);
}

}  // namespace fleetsim
