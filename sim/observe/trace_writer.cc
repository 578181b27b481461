// Chrome trace-event JSON, written as a stream: a '[' header, one event per
// line, and a closing ']' at the end. Timestamps are microseconds printed
// exactly from integer nanoseconds so traces are byte-stable.
#include "sim/observe/trace_writer.h"

#include <cinttypes>

namespace fleetsim {

namespace {
std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
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
  if (!traced(rank)) return;
  slice(rank, cpu ? 0 : 1, plan_.sources[plan_.ops[op].source].name, begin, end,
        "{\"step\":" + std::to_string(step) + "}");
}

void TraceWriter::on_work_started(const WorkRecord& w) {
  if (!traced(w.rank)) return;
  Open& o = open_[static_cast<size_t>(slot_[static_cast<size_t>(w.rank)])];
  o.active = true;
  o.work = w;
  o.transfer_begin = SimTime::never();
}

void TraceWriter::on_transfer(const WorkRecord& w, SimTime begin, SimTime, int64_t) {
  if (!traced(w.rank)) return;
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
  if (traced(w.rank)) close_work(w, w.completed, true);
}

void TraceWriter::on_fault(int rank, SimTime t, const Fault& f) {
  if (!traced(rank)) return;
  instant(rank, 0, std::string("fault: ") + fault_yaml_name(f.kind) +
                       (f.where.empty() ? "" : " in " + f.where) + (f.op.empty() ? "" : " " + f.op), t);
  if (f.kind == FaultKind::kStall) stuck_cpu_.push_back({rank, {t, f.where.empty() ? f.op : f.where}});
}

void TraceWriter::on_timeout(const WorkRecord& w, SimTime t) {
  if (traced(w.rank)) instant(w.rank, 0, "watchdog timeout", t);
}

void TraceWriter::on_end(SimTime t, Outcome) {
  for (const Open& o : open_)
    if (o.active) close_work(o.work, t, false);
  for (const auto& [rank, since] : stuck_cpu_) slice(rank, 0, since.second + " (never returned)", since.first, t, "");
  std::fputs("\n]\n", out_);
  std::fflush(out_);
}

}  // namespace fleetsim
