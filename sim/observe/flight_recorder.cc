// Flight-recorder dumps as PyTorch 2.15 writes them (schema version "2.10"; see
// docs/flight-recorder-formats.md): each entry's values gathered once (Entry), then
// written straight out in the pickle's key order and value types, as PyTorch's C++
// pickler encodes them (PickleOut) or as its JSON dump does (JsonOut).
// Discovery times model the watchdog's 100 ms poll: a state change is "discovered"
// at the next poll after it.
#include "sim/observe/flight_recorder.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "sim/observe/json_writer.h"
#include "sim/observe/pickle_writer.h"

namespace fleetsim {

void work_numel(const Plan& plan, const WorkRecord& w, int64_t* in, int64_t* out);  // job_log.cc

namespace {
constexpr int64_t kPollNs = 100'000'000;
// The dumping thread as PyTorch names it (the Python main thread), and a stand-in for
// its id: a decimal string, as PyTorch writes pthread ids.
constexpr const char* kThreadName = "python";
constexpr int64_t kThreadIdBase = 139'800'000'000'000;
constexpr const char* kVersion = "2.10";
constexpr const char* kCommLibVersion = "fleetsim-" FLEETSIM_VERSION;

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

// One frame PyTorch would record for the op; every frame's file is the scenario's.
struct Frame {
  std::string name;
  int64_t line = 0;
};

// One entry's values, named and ordered as PyTorch's dump writes its keys
// (FlightRecorderDetail.hpp); the two encoders below lay them out.
struct Entry {
  std::vector<Frame> frames;  // when stack traces are on
  uint32_t record_id = 0;
  int pg_id = 0;
  std::string_view pg_name;  // the dump's, for the entry's group kind
  const char* pg_desc = "";
  std::string_view thread_id;  // the dump's
  uint32_t collective_seq_id = 0, p2p_seq_id = 0, op_id = 0;
  std::string profiling_name;
  int64_t time_created_ns = 0;
  bool has_duration = false;
  double duration_ms = 0;
  int64_t in = 0, out = 0;
  const char* dtype = "";
  const char* state = "";
  int64_t discovered_started_ns = 0, discovered_completed_ns = 0;  // 0: unknown (None; 0 in JSON)
  bool retired = false;
  int64_t timeout_ms = 0;
  bool is_p2p = false;
};

// The frames PyTorch would record for the op: where the scenario issues it, the
// `when` that guards it, the step.
void frames_of(const Plan& plan, const WorkRecord& w, std::vector<Frame>* frames) {
  const OpSource& src = plan.sources[plan.ops[w.op].source];
  frames->push_back({src.name, src.loc.line});
  if (!src.when.empty())
    frames->push_back({"when: " + (src.when_else ? "not (" + src.when + ")" : src.when), src.when_loc.line});
  frames->push_back({"step " + std::to_string(w.step), 0});
}

// PyTorch names p2p ops with group ranks: "nccl:send 0->1" on a pp group.
std::string profiling_name(const Plan& plan, const WorkRecord& w) {
  const OpKind kind = plan.ops[w.op].kind;
  std::string prof = op_profiling_name(kind);
  const std::string self = std::to_string(plan.group_index(w.group, w.rank));
  const std::string peer = std::to_string(plan.group_index(w.group, w.peer));
  if (kind == OpKind::kSend) prof += " " + self + "->" + peer;
  if (kind == OpKind::kRecv) prof += " " + self + "<-" + peer;
  return prof;
}

// `pg_name` and `thread_id` are the dump's own (one rank's, so one group of each kind).
Entry entry_of(const Plan& plan, const WorkRecord& w, uint32_t id, SimTime t, std::string_view pg_name,
               std::string_view thread_id) {
  const FlightRecorderSettings& fr = plan.scenario.job.flight_recorder;
  const bool started = fr.timing() && w.started <= t, completed = w.completed <= t;
  Entry e;
  if (fr.stack_traces()) frames_of(plan, w, &e.frames);
  e.record_id = id;
  e.pg_id = static_cast<int>(w.group);
  e.pg_name = pg_name;
  e.pg_desc = pg_desc(w.group);
  e.thread_id = thread_id;
  e.collective_seq_id = w.collective_seq_id;
  e.p2p_seq_id = w.p2p_seq_id;
  e.op_id = w.op_id;
  e.profiling_name = profiling_name(plan, w);
  e.time_created_ns = w.created.ns;
  e.has_duration = fr.timing() && completed;
  if (e.has_duration) e.duration_ms = static_cast<double>((w.completed - w.started).ns) / 1e6;
  work_numel(plan, w, &e.in, &e.out);
  e.dtype = dtype_name(w.dtype);
  e.state = completed ? "completed" : started ? "started" : "scheduled";
  e.discovered_started_ns = fr.timing() ? discovered(w.started, t) : 0;
  e.discovered_completed_ns = discovered(w.completed, t);
  e.retired = completed || w.timed_out;
  e.timeout_ms = plan.scenario.job.watchdog ? plan.scenario.job.watchdog->ns / 1'000'000 : 0;
  e.is_p2p = w.peer >= 0;
  return e;
}

// A process group's pg_config and pg_status, as the dump of one rank sees it.
struct GroupView {
  std::string id;  // the rank-local pg_id, pg_status's key
  std::string name, ranks;
  const char* desc = "";
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

// The two encodings, behind one set of calls (a dict's items as key(), value). The
// pickle is what PyTorch's C++ pickler writes: `process_group` a tuple, pg_status
// counters ints, an unknown time None, a frame dict shared by every entry that
// names it (memoized once).
class PickleOut {
 public:
  explicit PickleOut(const std::string& file) : file_(file) {}
  void open_dict() { p_.open_dict(); }
  void close_dict() { p_.close_dict(); }
  void open_list() { p_.open_list(); }
  void close_list() { p_.close_list(); }
  void open_pair() { p_.open_tuple(2); }
  void close_pair() { p_.close_tuple(); }
  void key(std::string_view k) { p_.string(k); }
  void str(std::string_view v) { p_.string(v); }
  void integer(int64_t v) { p_.integer(v); }
  void real(double v) { p_.real(v); }
  void boolean(bool v) { p_.boolean(v); }
  void counter(int64_t v) { p_.integer(v); }
  void time(int64_t ns) { ns ? p_.integer(ns) : p_.none(); }
  void frame(const Frame& f);
  // The top-level dict memoized last, then STOP.
  std::string finish() {
    p_.memoize();
    return p_.finish();
  }

 private:
  const std::string& file_;  // the scenario file every frame names
  PickleWriter p_;
  std::unordered_map<std::string, uint32_t> frames_;  // memo slot of each frame written
};

// The same tree as _dump_nccl_trace_json writes it: unknown times 0, pg_status
// counters strings, `process_group` a list.
class JsonOut {
 public:
  explicit JsonOut(const std::string& file) : file_(file) {}
  void open_dict() { j_.open_object(); }
  void close_dict() { j_.close_object(); }
  void open_list() { j_.open_array(); }
  void close_list() { j_.close_array(); }
  void open_pair() { j_.open_array(); }
  void close_pair() { j_.close_array(); }
  void key(std::string_view k) { j_.key(k); }
  void str(std::string_view v) { j_.string(v); }
  void integer(int64_t v) { j_.integer(v); }
  void real(double v) { j_.real(v); }
  void boolean(bool v) { j_.boolean(v); }
  void counter(int64_t v) { j_.string(std::to_string(v)); }
  void time(int64_t ns) { j_.integer(ns); }
  void frame(const Frame& f);
  std::string finish() { return j_.finish() + "\n"; }

 private:
  const std::string& file_;
  JsonWriter j_;
};

// A dict item: its key, then the value in the form its type takes.
template <typename Out, typename V>
void put(Out& o, std::string_view k, const V& v) {
  o.key(k);
  if constexpr (std::is_same_v<V, bool>) o.boolean(v);
  else if constexpr (std::is_floating_point_v<V>) o.real(v);
  else if constexpr (std::is_integral_v<V>) o.integer(static_cast<int64_t>(v));
  else o.str(v);
}

template <typename Out>
void frame_dict(Out& o, const Frame& f, const std::string& file) {
  o.open_dict();
  put(o, "name", f.name);
  put(o, "filename", file);
  put(o, "line", f.line);
  o.close_dict();
}

void PickleOut::frame(const Frame& f) {
  std::string key = f.name;
  key.push_back('\0');
  key += std::to_string(f.line);
  if (auto it = frames_.find(key); it != frames_.end()) return p_.get(it->second);
  frame_dict(*this, f, file_);
  frames_.emplace(std::move(key), p_.memoize());
}

void JsonOut::frame(const Frame& f) { frame_dict(*this, f, file_); }

template <typename Out>
void pg_config(Out& o, const std::vector<GroupView>& groups) {
  o.key("pg_config");
  o.open_dict();
  for (const GroupView& g : groups) {
    o.key(g.name);
    o.open_dict();
    put(o, "name", g.name);
    put(o, "desc", g.desc);
    put(o, "ranks", g.ranks);
    o.close_dict();
  }
  o.close_dict();
}

template <typename Out>
void pg_status(Out& o, const std::vector<GroupView>& groups) {
  o.key("pg_status");
  o.open_dict();
  for (const GroupView& g : groups) {
    o.key(g.id);
    o.open_dict();
    o.key("last_enqueued_collective");
    o.counter(g.last_enqueued);
    o.key("last_started_collective");
    o.counter(g.last_started);
    o.key("last_completed_collective");
    o.counter(g.last_completed);
    o.close_dict();
  }
  o.close_dict();
}

template <typename Out>
void sizes(Out& o, const char* k, int64_t numel, const char* dtypes_key, const char* dtype) {
  o.key(k);
  o.open_list();
  o.open_list();
  o.integer(numel);
  o.close_list();
  o.close_list();
  o.key(dtypes_key);
  o.open_list();
  o.str(dtype);
  o.close_list();
}

// One entry, keys in the order PyTorch's dump writes them.
template <typename Out>
void write_entry(Out& o, const Entry& e, bool stack_traces) {
  o.open_dict();
  if (stack_traces) {
    o.key("frames");
    o.open_list();
    for (const Frame& f : e.frames) o.frame(f);
    o.close_list();
  }
  put(o, "record_id", e.record_id);
  put(o, "pg_id", e.pg_id);
  o.key("process_group");
  o.open_pair();
  o.str(e.pg_name);
  o.str(e.pg_desc);
  o.close_pair();
  put(o, "thread_name", kThreadName);
  put(o, "thread_id", e.thread_id);
  put(o, "collective_seq_id", e.collective_seq_id);
  put(o, "p2p_seq_id", e.p2p_seq_id);
  put(o, "op_id", e.op_id);
  put(o, "profiling_name", e.profiling_name);
  put(o, "time_created_ns", e.time_created_ns);
  if (e.has_duration) {
    put(o, "duration_ms", e.duration_ms);
  }
  sizes(o, "input_sizes", e.in, "input_dtypes", e.dtype);
  sizes(o, "output_sizes", e.out, "output_dtypes", e.dtype);
  put(o, "state", e.state);
  o.key("time_discovered_started_ns");
  o.time(e.discovered_started_ns);
  o.key("time_discovered_completed_ns");
  o.time(e.discovered_completed_ns);
  put(o, "retired", e.retired);
  put(o, "timeout_ms", e.timeout_ms);
  put(o, "is_p2p", e.is_p2p);
  o.close_dict();
}
}  // namespace

FlightRecorder::FlightRecorder(const Plan& plan, std::string dir, int capacity)
    : plan_(plan), dir_(std::move(dir)), cap_(static_cast<size_t>(std::max(capacity, 1))),
      ring_(static_cast<size_t>(plan.ranks)), count_(static_cast<size_t>(plan.ranks), 0),
      written_(static_cast<size_t>(plan.ranks), 0), dead_(static_cast<size_t>(plan.ranks), 0),
      last_enq_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1),
      last_start_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1),
      last_done_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1) {}

// Gloo (torch 2.15) records no send or recv: they take no record id and leave
// pg_status alone.
bool FlightRecorder::records(const WorkRecord& w) const {
  return !(plan_.scenario.job.backend == CommBackend::kGloo && w.peer >= 0);
}

// The slot holding w, if the ring still does. The recorder's ids follow the
// executor's in order (equal unless p2p was left out), so a binary search over the
// ring's live ids finds it.
FlightRecorder::Slot* FlightRecorder::find(const WorkRecord& w) {
  const auto r = static_cast<size_t>(w.rank);
  std::vector<Slot>& ring = ring_[r];
  const uint32_t n = count_[r];
  uint32_t lo = n > cap_ ? n - static_cast<uint32_t>(cap_) : 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (ring[mid % cap_].w.record_id < w.record_id) lo = mid + 1;
    else hi = mid;
  }
  if (lo == n) return nullptr;
  Slot& s = ring[lo % cap_];
  return s.w.record_id == w.record_id ? &s : nullptr;
}

void FlightRecorder::on_work_enqueued(const WorkRecord& w) {
  if (!records(w)) return;
  const auto r = static_cast<size_t>(w.rank);
  std::vector<Slot>& ring = ring_[r];
  const uint32_t id = count_[r]++;
  const size_t i = id % cap_;
  if (i >= ring.size()) ring.resize(i + 1);  // grows to the capacity only as records come
  ring[i] = Slot{w, id};
  if (w.peer < 0) last_enq_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_work_started(const WorkRecord& w) {
  if (!records(w)) return;
  if (Slot* e = find(w)) e->w = w;
  if (w.peer < 0) last_start_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_work_completed(const WorkRecord& w) {
  if (!records(w)) return;
  if (Slot* e = find(w)) e->w = w;
  if (w.peer < 0) last_done_[pg_index(w.rank, w.group)] = w.collective_seq_id;
}

void FlightRecorder::on_timeout(const WorkRecord& w, SimTime) {
  if (!records(w)) return;
  if (Slot* e = find(w)) e->w.timed_out = true;
}

void FlightRecorder::on_fault(int rank, SimTime, const Fault& f) {
  if (f.kind == FaultKind::kCrash || f.kind == FaultKind::kAbsent) dead_[static_cast<size_t>(rank)] = 1;
}

std::string FlightRecorder::dump(int rank, SimTime t) const {
  const FlightRecorderSettings& fr = plan_.scenario.job.flight_recorder;
  std::vector<GroupView> groups;
  std::string_view group_name[kGroupKinds];  // by kind, into groups (reserved: no reallocation)
  groups.reserve(kGroupKinds);
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan_.group_exists(kind)) continue;
    // pg_config is keyed by the group's global name, pg_status by the rank-local
    // pg_id, as PyTorch writes them.
    const int instance = plan_.group_instance(kind, rank);
    const size_t i = pg_index(rank, kind);
    groups.push_back(GroupView{std::to_string(g), plan_.group_global_name(kind, instance),
                               ranks_string(plan_, kind, instance), pg_desc(kind), last_enq_[i],
                               fr.timing() ? last_start_[i] : -1, last_done_[i]});
    group_name[g] = groups.back().name;
  }
  const std::string thread_id = std::to_string(kThreadIdBase + 4096 * int64_t{rank});
  std::vector<const Slot*> kept;
  const auto r = static_cast<size_t>(rank);
  const uint32_t n = count_[r];
  for (uint32_t id = n > cap_ ? n - static_cast<uint32_t>(cap_) : 0; id < n; ++id) {
    const Slot& s = ring_[r][id % cap_];
    if (fr.only_active() && discovered(s.w.completed, t)) continue;  // its completion was seen
    kept.push_back(&s);
  }
  const auto entries = [&](auto& o) {
    o.key("entries");
    o.open_list();
    for (const Slot* s : kept)
      write_entry(o, entry_of(plan_, s->w, s->id, t, group_name[static_cast<int>(s->w.group)], thread_id),
                  fr.stack_traces());
    o.close_list();
  };
  if (fr.json()) {  // fleetsim adds `rank`; `entries` is left out when empty
    JsonOut o(plan_.scenario.file);
    o.open_dict();
    put(o, "version", kVersion);
    put(o, "comm_lib_version", kCommLibVersion);
    put(o, "rank", rank);
    pg_config(o, groups);
    pg_status(o, groups);
    if (!kept.empty()) entries(o);
    o.close_dict();
    return o.finish();
  }
  PickleOut o(plan_.scenario.file);
  o.open_dict();
  put(o, "version", kVersion);
  pg_config(o, groups);
  put(o, "comm_lib_version", kCommLibVersion);
  pg_status(o, groups);
  entries(o);
  o.close_dict();
  return o.finish();
}

std::string FlightRecorder::file_name(int rank) const {
  const std::string r = std::to_string(rank);
  return plan_.scenario.job.flight_recorder.json() ? "rank_" + r + ".json" : "comm_lib_trace_rank_" + r;
}

void FlightRecorder::on_dump(int rank, SimTime t) {
  const auto r = static_cast<size_t>(rank);
  if (written_[r] || dead_[r]) return;
  written_[r] = 1;
  const std::string name = file_name(rank);
  std::ofstream f(dir_ + "/" + name, std::ios::binary);
  f << dump(rank, t);
  f.close();
  if (!f && write_error_.empty()) write_error_ = "fr/" + name + ": " + std::strerror(errno ? errno : EIO);
}

void FlightRecorder::on_end(SimTime t, Outcome) {
  for (int r = 0; r < plan_.ranks; ++r) on_dump(r, t);
}

}  // namespace fleetsim
