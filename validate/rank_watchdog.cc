// The watchdog thread of a real rank, with ProcessGroupNCCL's semantics: every
// 100 ms it checks the collective in flight against the timeout counted from its
// enqueue; on a timeout it logs PyTorch's message, dumps the flight recorder,
// raises the dump signal (a file in the run folder stands in for the TCPStore
// key) and aborts the process dump_wait later. Ranks that see the signal dump
// too. It also polls the transport's asynchronous errors (ncclCommGetAsyncError
// on GPUs), aborts the transport (ncclCommAbort) before the process goes, and
// samples this process's CPU use from /proc and the device's counters (NVML)
// for telemetry.csv.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>

#include "validate/rank_runner.h"

namespace fleetsim::validate {

namespace {
constexpr int64_t kWatchdogPollNs = 100'000'000;  // kWatchdogThreadSleepMillis = 100
constexpr int kExitAbort = 134;                   // as a process killed by SIGABRT reports it
constexpr int kExitTerminated = 143;

std::string signal_path(const std::string& dir) { return dir + "/.dump_signal"; }

// (running + runnable ns of the main thread, CPU ns of the whole process).
std::pair<int64_t, int64_t> read_proc_cpu() {
  int64_t run = 0, wait = 0;
  {
    std::ifstream in("/proc/self/schedstat");
    in >> run >> wait;
  }
  std::ifstream in("/proc/self/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');
  std::istringstream ss(close == std::string::npos ? "" : stat.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && ss >> field; ++i) {
    if (i == 14) utime = std::strtoll(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoll(field.c_str(), nullptr, 10);
  }
  const int64_t tck = ::sysconf(_SC_CLK_TCK);
  return {run + wait, (utime + stime) * (1'000'000'000 / (tck > 0 ? tck : 100))};
}
}  // namespace

void RankRunner::watchdog_loop() {
  const int64_t timeout = plan_.scenario.job.watchdog ? plan_.scenario.job.watchdog->ns : -1;
  const int64_t period = std::max<int64_t>(plan_.scenario.job.telemetry_period.ns, 10'000'000);
  int64_t next_poll = kWatchdogPollNs, next_tel = period;
  std::tie(last_demand_, last_cpu_) = read_proc_cpu();
  last_sample_ns_ = now_ns();
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int64_t now = now_ns();
    if (g_terminate) {  // the launcher is tearing the job down: dump what we have, then go
      std::lock_guard<std::mutex> lock(mu_);
      dump_locked(now);
      abort_transport_bounded();
      std::_Exit(kExitTerminated);
    }
    if (now >= next_tel) {
      sample_telemetry(next_tel, period);
      next_tel += period;
    }
    if (now >= next_poll) {
      next_poll += kWatchdogPollNs;
      std::lock_guard<std::mutex> lock(mu_);
      if (timeout >= 0 && has_inflight_ && !inflight_.timed_out && inflight_.created.ns + timeout <= now)
        fire_timeout(now);
      if (!dumped_) {
        const std::string err = transport_.async_error();
        if (!err.empty()) fire_async_error(now, err);
      }
      if (!dumped_ && ::access(signal_path(opt_.work_dir).c_str(), F_OK) == 0) {
        log_.log().on_log(rank_, SimTime{now},
                          "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(rank_) +
                              "] Observed flight recorder dump signal from another rank via TCPStore.");
        flush_log_locked(now);
        dump_locked(now);
      }
    }
    if (abort_at_ >= 0 && now >= abort_at_) {
      std::lock_guard<std::mutex> lock(mu_);
      abort_transport_bounded();  // ProcessGroupNCCL aborts its communicators, then the process
      part("exit\t" + std::to_string(now_ns()));
      std::_Exit(kExitAbort);
    }
  }
}

void RankRunner::fire_timeout(int64_t now) {
  inflight_.timed_out = true;
  const WorkRecord& w = inflight_;
  fr_.on_timeout(w, SimTime{now});
  log_.log().on_timeout(w, SimTime{now});
  flush_log_locked(now);
  part("timeout\t" + std::to_string(now) + "\t" + std::to_string(static_cast<int>(w.group)) + "\t" +
       std::to_string(w.collective_seq_id) + "\t" + std::to_string(w.op) + "\t" + std::to_string(w.created.ns) +
       "\t" + std::to_string(w.step));
  const int fd = ::open(signal_path(opt_.work_dir).c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) ::close(fd);
  dump_locked(now);
}

// A communicator reported an error (ncclCommGetAsyncError): ProcessGroupNCCL
// logs it, dumps and takes the process down as after a timeout.
void RankRunner::fire_async_error(int64_t now, const std::string& what) {
  log_.log().on_log(rank_, SimTime{now},
                    "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(rank_) +
                        "] NCCL communicator encountered error: " + what + ". Aborting the communicators.");
  flush_log_locked(now);
  dump_locked(now);
}

// Calls Transport::abort() on a helper thread and waits at most 10 s for it:
// an abort that itself hangs (a known failure of ncclCommAbort) must not keep
// the process alive; the exit that follows tears the device context down.
void RankRunner::abort_transport_bounded() {
  auto done = std::make_shared<std::atomic<bool>>(false);
  Transport* transport = &transport_;
  std::thread([transport, done] {
    transport->abort();
    *done = true;
  }).detach();
  const int64_t until = now_ns() + 10'000'000'000;
  while (!*done && now_ns() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (std::string(transport_.name()) != "mpi") {  // the CPU backend's log stays as it was
    const int64_t t = now_ns();
    log_.log().on_log(rank_, SimTime{t},
                      "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(rank_) + "] " + transport_.name() +
                          (*done ? ": communicators aborted (ncclCommAbort returned)"
                                 : ": ncclCommAbort did not return within 10 s; exiting anyway"));
    flush_log_locked(t);
  }
}

// Writes the rank's flight-recorder dump (fr/, as job.flight_recorder says) once and
// schedules the abort dump_wait later.
void RankRunner::dump_locked(int64_t now) {
  if (dumped_) return;
  dumped_ = true;
  fr_.on_dump(rank_, SimTime{now});
  part("stuck\t" + std::to_string(has_inflight_ ? inflight_.step : step_.load()));
  abort_at_ = now + plan_.scenario.job.dump_wait.ns;
}

void RankRunner::sample_telemetry(int64_t t, int64_t period_ns) {
  DeviceSample dev;
  if (device_telemetry_ && !transport_.sample_device(&dev)) device_telemetry_ = false;
  const auto [demand, cpu] = read_proc_cpu();
  const int64_t now = now_ns();
  const int state = state_;
  const int64_t open = state != 0 ? now - state_since_ : 0;
  const int64_t busy = busy_ns_ + open, comp = compute_ns_ + (state == 1 ? open : 0);
  // Shares of the time since the previous sample as measured, not of the
  // nominal period: a late wake-up of this thread must not read as idle time.
  const double p = static_cast<double>(now > last_sample_ns_ ? now - last_sample_ns_ : period_ns);
  last_sample_ns_ = now;
  auto pct = [p](int64_t d) { return std::min<int64_t>(100, std::llround(static_cast<double>(d) / p * 100.0)); };
  // gpu_util: on a CPU backend the main thread's demand (running or runnable);
  // on a GPU the driver's utilization.gpu, or without NVML the share of the
  // period this rank had a kernel or collective in flight (its own accounting).
  const bool gpu = std::string(transport_.name()) != "mpi";
  const int64_t util = !gpu ? pct(demand - last_demand_)
                            : dev.util_gpu_pct >= 0 ? std::llround(dev.util_gpu_pct) : pct(busy - last_busy_);
  char row[256];
  std::snprintf(row, sizeof row, "T\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%.3f\t%.3f\t%" PRId64 "\t%" PRId64, t,
                util, pct(cpu - last_cpu_),
                std::clamp(static_cast<double>(busy - last_busy_) / p, 0.0, 1.0),
                std::clamp(static_cast<double>(comp - last_compute_) / p, 0.0, 1.0), nic_bytes_.load(), step_.load());
  last_demand_ = demand;
  last_cpu_ = cpu;
  last_busy_ = busy;
  last_compute_ = comp;
  std::fputs(row, tel_);  // only this thread writes tel_
  if (device_telemetry_) {  // the driver's own figures follow, -1 where NVML has none
    std::snprintf(row, sizeof row, "\t%.0f\t%.0f\t%.1f\t%.0f\t%.0f", dev.util_gpu_pct, dev.sm_clock_mhz, dev.power_w,
                  dev.pcie_tx_kBps, dev.pcie_rx_kBps);
    std::fputs(row, tel_);
  }
  std::fputc('\n', tel_);
  std::fflush(tel_);
}

}  // namespace fleetsim::validate
