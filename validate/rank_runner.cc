// The plan interpreter of one real rank (the same walk over Plan::program as the
// simulator's), its collectives through the Transport and its watchdog thread.
// Compute and collectives run synchronously from the rank's main thread (on a
// GPU: launched, then waited for on an event), so a collective is created,
// started and waited for in one go (see docs/validate.md).
#include "validate/rank_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fleetsim/rng.h"
#include "validate/real_record.h"

namespace fleetsim::validate {

std::atomic<bool> g_terminate{false};

namespace {
constexpr int kStateIdle = 0, kStateCompute = 1, kStateCollective = 2;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

LogCapture::LogCapture(const Plan& plan) {
  f_ = open_memstream(&buf_, &len_);
  FLEETSIM_CHECK(f_ != nullptr);
  log_ = std::make_unique<JobLog>(plan, f_);
}

LogCapture::~LogCapture() {
  log_.reset();
  std::fclose(f_);
  std::free(buf_);
}

std::vector<std::string> LogCapture::take() {
  std::fflush(f_);
  std::vector<std::string> lines;
  while (consumed_ < len_) {
    const char* start = buf_ + consumed_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - consumed_));
    if (!nl) break;
    lines.emplace_back(start, nl);
    consumed_ += static_cast<size_t>(nl - start) + 1;
  }
  return lines;
}

RankRunner::RankRunner(const Plan& plan, const RunnerOptions& opt, int rank, Transport& transport)
    : plan_(plan), opt_(opt), rank_(rank), compute_(plan), transport_(transport),
      fr_(plan, opt.work_dir + "/fr", plan.scenario.job.flight_recorder_entries), log_(plan) {
  part_ = std::fopen(part_path(opt.work_dir, rank).c_str(), "wb");
  tel_ = std::fopen(telemetry_part_path(opt.work_dir, rank).c_str(), "wb");
  FLEETSIM_CHECK(part_ != nullptr && tel_ != nullptr);
}

RankRunner::~RankRunner() {
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (part_) std::fclose(part_);
  if (tel_) std::fclose(tel_);
}

int64_t RankRunner::now_ns() const { return steady_ns() - t0_ns_; }

void RankRunner::part(const std::string& line) {
  std::fputs(line.c_str(), part_);
  std::fputc('\n', part_);
  std::fflush(part_);
}

void RankRunner::flush_log_locked(int64_t t) {
  for (const std::string& l : log_.take()) part("L\t" + std::to_string(t) + "\t" + l);
}

int RankRunner::run() {
  transport_.world_barrier();
  t0_ns_ = steady_ns();  // the common start: every rank leaves the barrier together
  watchdog_ = std::thread([this] { watchdog_loop(); });
  if (std::find(plan_.absent_ranks.begin(), plan_.absent_ranks.end(), rank_) != plan_.absent_ranks.end())
    stall_forever();  // a rank that never starts: its peers wait for it
  for (int64_t step = 1; step <= plan_.scenario.job.steps; ++step) {
    step_ = step;
    if (!begin_step(step)) stall_forever();
    if (!interpret(step)) return 2;
    std::lock_guard<std::mutex> lock(mu_);
    part("S\t" + std::to_string(step) + "\t" + std::to_string(now_ns()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t t = now_ns();
    part("done\t" + std::to_string(t));
    fr_.on_dump(rank_, SimTime{t});
    dumped_ = true;
  }
  stop_ = true;
  watchdog_.join();
  return 0;
}

// Applies crash and stall faults at the start of a step. False: the rank stalls.
bool RankRunner::begin_step(int64_t step) {
  if (const Fault* fault = plan_.step_fault(rank_, step)) {
    const Fault& f = *fault;
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t t = now_ns();
    if (f.kind == FaultKind::kCrash) {
      part("crash\t" + std::to_string(t) + "\t" + std::to_string(step));
      ::raise(SIGKILL);  // the process dies as a segfault or OOM kill would: no dump, no goodbye
    }
    fr_.on_fault(rank_, SimTime{t}, f);
    log_.log().on_fault(rank_, SimTime{t}, f);
    return false;
  }
  return true;
}

// Walks one step of the program, as the simulator's CpuStreams::interpret does. False on a runtime error.
bool RankRunner::interpret(int64_t step) {
  uint32_t pc = 0;
  while (pc < plan_.program.size()) {
    const Instr& in = plan_.program[pc];
    if (in.kind == InstrKind::kJump) {
      pc = in.target;
      continue;
    }
    if (in.kind == InstrKind::kBranch) {
      int64_t v = 0;
      if (!plan_.exprs[in.index].eval(plan_.vars(rank_, step), &v)) {
        std::fprintf(stderr, "%s: error: division by zero in `when` at rank %d, step %" PRId64 "\n",
                     plan_.scenario.file.c_str(), rank_, step);
        return false;
      }
      pc = v != 0 ? pc + 1 : in.target;
      continue;
    }
    issue_op(step, in.index);
    ++pc;
  }
  return true;
}

const Fault* RankRunner::op_fault(int64_t step, uint32_t op_index) const {
  return plan_.op_fault(rank_, step, op_index);
}

void RankRunner::enter_state(int state) {
  state_since_ = now_ns();
  state_ = state;
}

void RankRunner::leave_state() {
  const int64_t d = now_ns() - state_since_;
  if (state_ == kStateCompute) compute_ns_ += d;
  busy_ns_ += d;
  state_ = kStateIdle;
}

void RankRunner::stall_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

void RankRunner::issue_op(int64_t step, uint32_t op_index) {
  const PlanOp& op = plan_.ops[op_index];
  const Fault* fault = op_fault(step, op_index);
  switch (op.kind) {
    case OpKind::kCompute: {
      const int64_t ns = compute_.sample_ns(rank_, step, op_index);
      enter_state(kStateCompute);
      transport_.compute(ns);
      leave_state();
      return;
    }
    case OpKind::kCpu:
      if (fault && fault->kind == FaultKind::kStall) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          log_.log().on_fault(rank_, SimTime{now_ns()}, *fault);
        }
        stall_forever();
      }
      std::this_thread::sleep_for(std::chrono::nanoseconds(compute_.sample_ns(rank_, step, op_index)));
      return;
    case OpKind::kSync:
      return;  // nothing runs asynchronously on a CPU: everything issued has finished
    case OpKind::kLog: {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t t = now_ns();
      log_.log().on_log(rank_, SimTime{t}, plan_.format_log(rank_, step, op_index));
      flush_log_locked(t);
      return;
    }
    case OpKind::kStoreBarrier:
      transport_.store_barrier();
      return;
    case OpKind::kWhen:
      return;  // flattened by compile_plan
    default:
      issue_work(step, op_index, fault);
  }
}

// A collective or p2p op: recorded, posted, spun on until complete.
void RankRunner::issue_work(int64_t step, uint32_t op_index, const Fault* fault) {
  const PlanOp& op = plan_.ops[op_index];
  if (fault && fault->kind == FaultKind::kSkip) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.log().on_fault(rank_, SimTime{now_ns()}, *fault);
    return;
  }
  const bool p2p = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  const auto g = static_cast<size_t>(op.group);
  WorkRecord w;
  w.rank = rank_;
  w.group = op.group;
  w.op = op_index;
  w.step = step;
  w.bytes = Plan::issued_bytes(op, fault);
  w.dtype = Plan::issued_dtype(op, fault);
  w.peer = p2p ? rank_ + op.peer_dir * plan_.tp * plan_.dp : -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.record_id = next_record_++;
    w.p2p_seq_id = p2p ? ++p2p_seq_[g] : p2p_seq_[g];
    w.collective_seq_id = p2p ? coll_seq_[g] : ++coll_seq_[g];
    w.op_id = ++op_seq_[g];
    w.created = w.started = SimTime{now_ns()};
    w.state = WorkState::kStarted;
    fr_.on_work_enqueued(w);
    fr_.on_work_started(w);
    log_.log().on_work_enqueued(w);
    inflight_ = w;
    has_inflight_ = true;
  }
  const int dir = op.kind == OpKind::kSend ? op.peer_dir : -op.peer_dir;
  const int n = plan_.group_size(op.group);
  WorkSpec spec;
  spec.kind = op.kind;
  spec.group = op.group;
  spec.bytes = w.bytes;
  spec.members = n;
  spec.root = op.root;
  spec.peer = w.peer;
  spec.tag = dir > 0 ? 1 : 2;
  enter_state(kStateCollective);
  if (opt_.spin_step == step && !spin_issued_) {  // the spin demonstration: a peer that never comes
    spin_issued_ = true;
    transport_.spin_on_missing_peer();
    stall_forever();
  }
  if (!transport_.collective(spec)) stall_forever();  // NCCL would never finish either
  leave_state();
  std::lock_guard<std::mutex> lock(mu_);
  w.completed = SimTime{now_ns()};
  w.state = WorkState::kCompleted;
  fr_.on_work_completed(w);
  log_.log().on_work_completed(w);
  has_inflight_ = false;
  nic_bytes_ += static_cast<int64_t>(ring_bytes_sent_per_rank(op.kind, w.bytes, p2p ? 2 : n));
}


}  // namespace fleetsim::validate
