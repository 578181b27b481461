// Per-rank GPU streams: each rank's launch queue (a bounded ring of items its CPU
// enqueues: compute kernels, collectives, p2p ops, end-of-step markers) and the GPU
// that runs it in order. A kernel runs for its sampled duration; a collective or
// p2p op starts when it reaches the head (the rank arrives; matching then owns it
// until it completes); a step marker completes inline and finishes the rank's step.
// Owns the queues, the busy flags, the generations and the finished steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/exec/exec_context.h"

namespace fleetsim {

enum class ItemKind : uint8_t { kCompute, kCollective, kP2p, kStepMarker };

// One entry of a rank's launch queue.
struct GpuItem {
  ItemKind kind = ItemKind::kCompute;
  int64_t step = 0;
  int64_t dur_ns = 0;   // kCompute
  SimTime begun{};      // when the GPU started it
  WorkRecord work;      // kCollective, kP2p (work.op is set for kCompute too)
};

class GpuStreams {
 public:
  explicit GpuStreams(ExecContext& ctx);

  uint32_t queued(int r) const { return qlen_[static_cast<size_t>(r)]; }
  bool full(int r) const { return queued(r) >= qcap_; }
  uint32_t capacity() const { return qcap_; }
  // Nothing enqueued and nothing running: what a sync waits for.
  bool drained(int r) const { return queued(r) == 0 && !busy_[static_cast<size_t>(r)]; }
  // The head is running (a kernel, or a collective the rank has arrived at).
  bool busy(int r) const { return busy_[static_cast<size_t>(r)] != 0; }
  // The i-th item from the head. REQUIRES: i < queued(r).
  GpuItem& item(int r, uint32_t i) {
    FLEETSIM_DCHECK(i < queued(r));
    const auto ru = static_cast<size_t>(r);
    return queue_[ru * qcap_ + (qhead_[ru] + i) % qcap_];
  }
  GpuItem& head(int r) { return item(r, 0); }

  // The CPU enqueues an item (reset to defaults). REQUIRES: !full(r).
  GpuItem& push(int r);
  // The CPU has issued all of `step`: it finishes now if the GPU has drained,
  // else when a marker reaches the head. REQUIRES: drained(r) || !full(r).
  void end_step(int r, int64_t step);

  // Starts what is at the head of an idle GPU; markers complete inline. Returns
  // whether anything moved; *arrived is the collective or p2p op it started
  // (the rank has arrived at it), else null.
  bool progress(int r, GpuItem** arrived);
  // kGpuDone: the kernel at the head ends. False if stale (the rank crashed since).
  bool kernel_done(int r, uint32_t generation);
  // The collective or p2p op at the head completed on this rank.
  void complete_head(int r);
  // The rank's process died during `step`: its queue is dropped and its
  // pending kernel end will be ignored.
  void kill(int r, int64_t step);
  // A member whose transfer lost its peer spins again (if it has work queued).
  void spin_head(int r);
  // Tells observers what r's GPU is doing.
  void set_state(int r, GpuState s, int64_t step);

  // The queues' storage (n x capacity items), sized by one of these, first:
  // allocate() for a run from the start; adopt_all() for a handover (hybrid_executor.h)
  // whose queues are all full: `queue` (ranks x capacity, head first, each head
  // running since its `begun`) becomes the queues as it is, without a copy, and
  // rank r has finished finished_steps[r].
  void allocate();
  void adopt_all(std::vector<GpuItem>&& queue, std::span<const int64_t> finished_steps);

  int64_t finished_step(int r) const { return finished_step_[static_cast<size_t>(r)]; }
  // Cache hints only (no effect on the run): r's per-rank words, and the item at
  // the head of r's queue (reads the head index, so hint the words first).
  void prefetch_state(int r) const {
    const auto ru = static_cast<size_t>(r);
    __builtin_prefetch(&gen_[ru]);
    __builtin_prefetch(&qhead_[ru]);
    __builtin_prefetch(&qlen_[ru]);
    __builtin_prefetch(&busy_[ru]);
  }
  void prefetch_head(int r) const {
    const auto ru = static_cast<size_t>(r);
    const char* p = reinterpret_cast<const char*>(&queue_[ru * qcap_ + qhead_[ru]]);
    __builtin_prefetch(p);
    __builtin_prefetch(p + sizeof(GpuItem) - 1);
  }
  // Ranks that finished the job's last step.
  int ranks_done() const { return ranks_done_; }

 private:
  void pop(int r);
  void finish_step(int r, int64_t step);

  ExecContext& ctx_;
  uint32_t qcap_ = 0;                  // job.launch_queue + 1 (the step marker)
  std::vector<GpuItem> queue_;         // n * qcap_ ring buffers
  std::vector<uint32_t> qhead_, qlen_;  // per rank
  std::vector<uint8_t> busy_;          // per rank: the head is running
  std::vector<uint32_t> gen_;          // per rank: invalidates a crashed rank's pending kGpuDone
  std::vector<int64_t> finished_step_;  // per rank
  int ranks_done_ = 0;
};

}  // namespace fleetsim
