// Chrome trace-event JSON, written as a stream: a '[' header, one event per
// line, and a closing ']' at the end. Timestamps are microseconds printed
// exactly from integer nanoseconds so traces are byte-stable.
#include "sim/observe/trace_writer.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <climits>

namespace fleetsim {

namespace {
std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}
std::string seconds(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
  return buf;
}
std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}
}  // namespace

TraceWriter::TraceWriter(const Plan& plan, std::vector<int> ranks, std::FILE* out)
    : plan_(plan), out_(out), slot_(static_cast<size_t>(plan.ranks), -1), open_(ranks.size()) {
  if (ranks.size() < static_cast<size_t>(plan.ranks)) tally_.resize(static_cast<size_t>(plan.ranks));
  std::fputs("[\n", out_);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    slot_[static_cast<size_t>(r)] = static_cast<int32_t>(i);
    std::fprintf(out_, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}},\n"
                       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"cpu\"}},\n"
                       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":\"gpu\"}}",
                 first_ ? "" : ",\n", r, r, r, r);
    first_ = false;
  }
}

void TraceWriter::slice(int rank, int tid, const std::string& name, SimTime begin, SimTime end,
                        const std::string& args) {
  std::fprintf(out_, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%s,\"dur\":%s%s%s}",
               first_ ? "" : ",\n", rank, tid, escape(name).c_str(), micros(begin.ns).c_str(),
               micros((end - begin).ns).c_str(), args.empty() ? "" : ",\"args\":", args.c_str());
  first_ = false;
}

void TraceWriter::instant(int rank, int tid, const std::string& name, SimTime t) {
  std::fprintf(out_, "%s{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%s}",
               first_ ? "" : ",\n", rank, tid, escape(name).c_str(), micros(t.ns).c_str());
  first_ = false;
}

void TraceWriter::on_compute(int rank, uint32_t op, int64_t step, SimTime begin, SimTime end, bool cpu) {
  if (!traced(rank)) {
    Tally& t = tally_[static_cast<size_t>(rank)];
    t.compute_ns += (end - begin).ns, t.last_step = std::max(t.last_step, step);
    return;
  }
  slice(rank, cpu ? 0 : 1, plan_.sources[plan_.ops[op].source].name, begin, end,
        "{\"step\":" + std::to_string(step) + "}");
}

void TraceWriter::on_work_started(const WorkRecord& w) {
  if (!traced(w.rank)) {
    Tally& t = tally_[static_cast<size_t>(w.rank)];
    t.started = w.started, t.transfer = SimTime::never(), t.open = true;
    return;
  }
  Open& o = open_[static_cast<size_t>(slot_[static_cast<size_t>(w.rank)])];
  o.active = true;
  o.work = w;
  o.transfer_begin = SimTime::never();
}

void TraceWriter::on_transfer(const WorkRecord& w, SimTime begin, SimTime, int64_t) {
  if (!traced(w.rank)) {
    tally_[static_cast<size_t>(w.rank)].transfer = begin;
    return;
  }
  open_[static_cast<size_t>(slot_[static_cast<size_t>(w.rank)])].transfer_begin = begin;
}

void TraceWriter::close_work(const WorkRecord& w, SimTime end, bool completed) {
  Open& o = open_[static_cast<size_t>(slot_[static_cast<size_t>(w.rank)])];
  const PlanOp& op = plan_.ops[w.op];
  std::string name = plan_.sources[op.source].name;
  if (!completed) name += " (never completed)";
  const std::string args = "{\"step\":" + std::to_string(w.step) + ",\"group\":\"" + group_name(w.group) +
                           "\",\"seq\":" + std::to_string(w.peer < 0 ? w.collective_seq_id : w.p2p_seq_id) +
                           ",\"op\":\"" + op_profiling_name(op.kind) + "\",\"bytes\":" +
                           std::to_string(w.bytes) + "}";
  slice(w.rank, 1, name, w.started, end, args);
  const SimTime wait_end = o.transfer_begin == SimTime::never() ? end : o.transfer_begin;
  if (wait_end > w.started) slice(w.rank, 1, "wait for peers", w.started, wait_end, "");
  o.active = false;
}

void TraceWriter::on_work_completed(const WorkRecord& w) {
  if (traced(w.rank)) return close_work(w, w.completed, true);
  Tally& t = tally_[static_cast<size_t>(w.rank)];
  const SimTime wait_end = t.transfer == SimTime::never() ? w.completed : t.transfer;
  t.collective_ns += (w.completed - w.started).ns, t.wait_ns += (wait_end - w.started).ns, t.open = false;
  t.last_step = std::max(t.last_step, w.step);
}

void TraceWriter::on_fault(int rank, SimTime t, const Fault& f) {
  const std::string what = std::string("fault: ") + fault_yaml_name(f.kind) + (f.where.empty() ? "" : " in " + f.where) +
                           (f.op.empty() ? "" : " " + f.op);
  if (!traced(rank)) {
    if (summary_faults_++ < kTraceSummaryFaults) instant(plan_.ranks, 0, what + " on rank " + std::to_string(rank), t);
    return;
  }
  instant(rank, 0, what, t);
  if (f.kind == FaultKind::kStall) stuck_cpu_.push_back({rank, {t, f.where.empty() ? f.op : f.where}});
}

void TraceWriter::on_timeout(const WorkRecord& w, SimTime t) {
  if (traced(w.rank)) return instant(w.rank, 0, "watchdog timeout", t);
  tally_[static_cast<size_t>(w.rank)].timed_out = true;
  if (first_timeout_rank_ < 0) first_timeout_rank_ = w.rank, first_timeout_at_ = t;
}

void TraceWriter::on_end(SimTime t, Outcome) {
  for (const Open& o : open_)
    if (o.active) close_work(o.work, t, false);
  for (const auto& [rank, since] : stuck_cpu_) slice(rank, 0, since.second + " (never returned)", since.first, t, "");
  if (!tally_.empty()) write_summary(t);
  std::fputs("\n]\n", out_);
  std::fflush(out_);
}

// One process (pid = the rank count, which no rank has) with a thread per range of
// contiguous untraced ranks and one slice over the run whose args hold min/mean/max.
void TraceWriter::write_summary(SimTime end) {
  std::vector<int> rest;
  for (int r = 0; r < plan_.ranks; ++r)
    if (!traced(r)) rest.push_back(r);
  const int pid = plan_.ranks;
  std::fprintf(out_, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%zu ranks summarized\"}}",
               first_ ? "" : ",\n", pid, rest.size());
  first_ = false;
  if (first_timeout_rank_ >= 0)
    instant(pid, 0, "first watchdog timeout among them: rank " + std::to_string(first_timeout_rank_), first_timeout_at_);
  const size_t bins = std::min<size_t>(rest.size(), kTraceSummaryBins);
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * rest.size() / bins, hi = (b + 1) * rest.size() / bins;
    const std::string name = hi - lo == 1 ? "rank " + std::to_string(rest[lo])
                                          : "ranks " + std::to_string(rest[lo]) + "-" + std::to_string(rest[hi - 1]);
    std::fprintf(out_, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%zu,\"args\":{\"name\":\"%s\"}}",
                 pid, b, name.c_str());
    auto stat = [&](int64_t Tally::*field) {
      int64_t lo_v = INT64_MAX, hi_v = INT64_MIN, sum = 0;
      for (size_t k = lo; k < hi; ++k) {
        const int64_t v = tally_[static_cast<size_t>(rest[k])].*field;
        lo_v = std::min(lo_v, v), hi_v = std::max(hi_v, v), sum += v;
      }
      return std::array<int64_t, 3>{lo_v, sum / static_cast<int64_t>(hi - lo), hi_v};
    };
    auto secs = [&](int64_t Tally::*field) {
      const auto v = stat(field);
      return "[" + seconds(v[0]) + "," + seconds(v[1]) + "," + seconds(v[2]) + "]";
    };
    const auto step = stat(&Tally::last_step);
    int open = 0, timed_out = 0;
    for (size_t k = lo; k < hi; ++k) {
      open += tally_[static_cast<size_t>(rest[k])].open ? 1 : 0;
      timed_out += tally_[static_cast<size_t>(rest[k])].timed_out ? 1 : 0;
    }
    const std::string args = "{\"ranks\":" + std::to_string(hi - lo) + ",\"min_mean_max\":{\"compute_s\":" +
                             secs(&Tally::compute_ns) + ",\"collective_s\":" + secs(&Tally::collective_ns) +
                             ",\"wait_for_peers_s\":" + secs(&Tally::wait_ns) + ",\"last_step\":[" +
                             std::to_string(step[0]) + "," + std::to_string(step[1]) + "," + std::to_string(step[2]) +
                             "]},\"in_collective_at_end\":" + std::to_string(open) +
                             ",\"timed_out\":" + std::to_string(timed_out) + "}";
    slice(pid, static_cast<int>(b), name + " (summary)", SimTime{}, end, args);
  }
}

}  // namespace fleetsim
