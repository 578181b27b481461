// Flight-recorder dumps in PyTorch's JSON schema (version "2.10" keys; see
// docs/diagnose.md, "The order, and what each step reads"). pg_config/pg_status values are
// strings as in _dump_nccl_trace_json. Discovery times model the watchdog's
// 100 ms poll: a state change is "discovered" at the next poll after it.
#include "sim/observe/flight_recorder.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fleetsim {

void work_numel(const Plan& plan, const WorkRecord& w, int64_t* in, int64_t* out);  // job_log.cc

namespace {
constexpr int64_t kPollNs = 100'000'000;

int64_t discovered(SimTime happened, SimTime dump) {
  if (happened == SimTime::never() || happened > dump) return 0;
  const int64_t d = (happened.ns + kPollNs - 1) / kPollNs * kPollNs;
  return d <= dump.ns ? d : 0;
}

std::string ranks_string(const Plan& plan, GroupKind g, int instance) {
  std::string s = "[";
  for (int i = 0; i < plan.group_size(g); ++i) {
    if (i) s += ", ";
    s += std::to_string(plan.group_member(g, instance, i));
  }
  return s + "]";
}

const char* pg_desc(GroupKind g) { return g == GroupKind::kWorld ? "default_pg" : group_name(g); }
}  // namespace

FlightRecorder::FlightRecorder(const Plan& plan, std::string dir, int capacity)
    : plan_(plan), dir_(std::move(dir)), cap_(static_cast<size_t>(std::max(capacity, 1))),
      ring_(static_cast<size_t>(plan.ranks)), count_(static_cast<size_t>(plan.ranks), 0),
      written_(static_cast<size_t>(plan.ranks), 0), dead_(static_cast<size_t>(plan.ranks), 0),
      last_enq_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1),
      last_start_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1),
      last_done_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1) {}

WorkRecord* FlightRecorder::find(const WorkRecord& w) {
  const auto r = static_cast<size_t>(w.rank);
  if (w.record_id + cap_ < count_[r]) return nullptr;  // overwritten already
  const size_t i = w.record_id % cap_;
  if (i >= ring_[r].size()) return nullptr;
  WorkRecord& slot = ring_[r][i];
  return slot.record_id == w.record_id ? &slot : nullptr;
}

void FlightRecorder::on_work_enqueued(const WorkRecord& w) {
  const auto r = static_cast<size_t>(w.rank);
  std::vector<WorkRecord>& ring = ring_[r];
  const size_t i = w.record_id % cap_;
  if (i >= ring.size()) ring.resize(i + 1);  // grows to the capacity only as records come
  ring[i] = w;
  count_[r] = w.record_id + 1;
  if (w.peer < 0) last_enq_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_work_started(const WorkRecord& w) {
  if (WorkRecord* e = find(w)) *e = w;
  if (w.peer < 0) last_start_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_work_completed(const WorkRecord& w) {
  if (WorkRecord* e = find(w)) *e = w;
  if (w.peer < 0) last_done_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_timeout(const WorkRecord& w, SimTime) {
  if (WorkRecord* e = find(w)) e->timed_out = true;
}

void FlightRecorder::on_fault(int rank, SimTime, const Fault& f) {
  if (f.kind == FaultKind::kCrash || f.kind == FaultKind::kAbsent) dead_[static_cast<size_t>(rank)] = 1;
}

std::string FlightRecorder::dump_json(int rank, SimTime t) const {
  using Json = nlohmann::ordered_json;
  Json root;
  root["version"] = "2.10";
  root["comm_lib_version"] = "fleetsim-" FLEETSIM_VERSION;
  root["rank"] = rank;
  Json pg_config = Json::object(), pg_status = Json::object();
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan_.group_exists(kind)) continue;
    const std::string id = std::to_string(g);
    pg_config[id] = {{"name", id}, {"desc", pg_desc(kind)},
                     {"ranks", ranks_string(plan_, kind, plan_.group_instance(kind, rank))}};
    const size_t i = pg_index(rank, kind);
    pg_status[id] = {{"last_enqueued_collective", std::to_string(last_enq_[i])},
                     {"last_started_collective", std::to_string(last_start_[i])},
                     {"last_completed_collective", std::to_string(last_done_[i])}};
  }
  root["pg_config"] = std::move(pg_config);
  root["pg_status"] = std::move(pg_status);
  Json entries = Json::array();
  const auto r = static_cast<size_t>(rank);
  const uint32_t n = count_[r];
  const uint32_t first = n > cap_ ? n - static_cast<uint32_t>(cap_) : 0;
  for (uint32_t id = first; id < n; ++id) {
    const WorkRecord& w = ring_[r][id % cap_];
    const PlanOp& op = plan_.ops[w.op];
    const OpSource& src = plan_.sources[op.source];
    const bool started = w.started <= t, completed = w.completed <= t;
    int64_t in = 0, out = 0;
    work_numel(plan_, w, &in, &out);
    std::string prof = op_profiling_name(op.kind);
    // PyTorch names p2p ops with group ranks: "nccl:send 0->1" on a pp group.
    const std::string self = std::to_string(plan_.group_index(w.group, rank));
    const std::string peer = std::to_string(plan_.group_index(w.group, w.peer));
    if (op.kind == OpKind::kSend) prof += " " + self + "->" + peer;
    if (op.kind == OpKind::kRecv) prof += " " + self + "<-" + peer;
    Json e;
    e["record_id"] = w.record_id;
    e["pg_id"] = static_cast<int>(w.group);
    e["process_group"] = {std::to_string(static_cast<int>(w.group)), pg_desc(w.group)};
    e["collective_seq_id"] = w.collective_seq_id;
    e["p2p_seq_id"] = w.p2p_seq_id;
    e["op_id"] = w.op_id;
    e["profiling_name"] = prof;
    e["time_created_ns"] = w.created.ns;
    e["time_discovered_started_ns"] = discovered(w.started, t);
    e["time_discovered_completed_ns"] = discovered(w.completed, t);
    if (completed) e["duration_ms"] = static_cast<double>((w.completed - w.started).ns) / 1e6;
    e["input_sizes"] = Json::array({Json::array({in})});
    e["input_dtypes"] = Json::array({dtype_name(w.dtype)});
    e["output_sizes"] = Json::array({Json::array({out})});
    e["output_dtypes"] = Json::array({dtype_name(w.dtype)});
    e["state"] = completed ? "completed" : started ? "started" : "scheduled";
    e["retired"] = completed || w.timed_out;
    e["timeout_ms"] = plan_.scenario.job.watchdog ? plan_.scenario.job.watchdog->ns / 1'000'000 : 0;
    e["is_p2p"] = w.peer >= 0;
    Json frames = Json::array();
    frames.push_back({{"name", src.name}, {"filename", plan_.scenario.file}, {"line", src.loc.line}});
    if (!src.when.empty())
      frames.push_back({{"name", "when: " + (src.when_else ? "not (" + src.when + ")" : src.when)}, {"filename", plan_.scenario.file}, {"line", src.when_loc.line}});
    frames.push_back({{"name", "step " + std::to_string(w.step)}, {"filename", plan_.scenario.file}, {"line", 0}});
    e["frames"] = std::move(frames);
    entries.push_back(std::move(e));
  }
  if (!entries.empty()) root["entries"] = std::move(entries);
  return root.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void FlightRecorder::on_dump(int rank, SimTime t) {
  const auto r = static_cast<size_t>(rank);
  if (written_[r] || dead_[r]) return;
  written_[r] = 1;
  const std::string name = "rank_" + std::to_string(rank) + ".json";
  std::ofstream f(dir_ + "/" + name, std::ios::binary);
  f << dump_json(rank, t);
  f.close();
  if (!f && write_error_.empty()) write_error_ = "fr/" + name + ": " + std::strerror(errno ? errno : EIO);
}

void FlightRecorder::on_end(SimTime t, Outcome) {
  for (int r = 0; r < plan_.ranks; ++r) on_dump(r, t);
}

}  // namespace fleetsim
