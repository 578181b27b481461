// Flight-recorder dumps as PyTorch 2.15 writes them (schema version "2.10"; see
// docs/flight-recorder-formats.md): one value tree per dump, in the pickle's key order
// and value types, then encoded as PyTorch's C++ pickler does or as its JSON dump does.
// Discovery times model the watchdog's 100 ms poll: a state change is "discovered"
// at the next poll after it.
#include "sim/observe/flight_recorder.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/observe/pickle_writer.h"

namespace fleetsim {

void work_numel(const Plan& plan, const WorkRecord& w, int64_t* in, int64_t* out);  // job_log.cc

namespace {
using Json = nlohmann::ordered_json;
constexpr int64_t kPollNs = 100'000'000;
// The dumping thread as PyTorch names it (the Python main thread), and a stand-in for
// its id: a decimal string, as PyTorch writes pthread ids.
constexpr const char* kThreadName = "python";
constexpr int64_t kThreadIdBase = 139'800'000'000'000;

int64_t discovered(SimTime happened, SimTime dump) {
  if (happened == SimTime::never() || happened > dump) return 0;
  const int64_t d = (happened.ns + kPollNs - 1) / kPollNs * kPollNs;
  return d <= dump.ns ? d : 0;
}

Json time_or_none(int64_t ns) { return ns ? Json(ns) : Json(nullptr); }

std::string ranks_string(const Plan& plan, GroupKind g, int instance) {
  std::string s = "[";
  for (int i = 0; i < plan.group_size(g); ++i) {
    if (i) s += ", ";
    s += std::to_string(plan.group_member(g, instance, i));
  }
  return s + "]";
}

const char* pg_desc(GroupKind g) { return g == GroupKind::kWorld ? "default_pg" : group_name(g); }

// The frames PyTorch would record for the op: where the scenario issues it, the
// `when` that guards it, the step.
Json frames_of(const Plan& plan, const WorkRecord& w) {
  const OpSource& src = plan.sources[plan.ops[w.op].source];
  const std::string& file = plan.scenario.file;
  Json frames = Json::array();
  frames.push_back({{"name", src.name}, {"filename", file}, {"line", src.loc.line}});
  if (!src.when.empty())
    frames.push_back({{"name", "when: " + (src.when_else ? "not (" + src.when + ")" : src.when)},
                      {"filename", file},
                      {"line", src.when_loc.line}});
  frames.push_back({{"name", "step " + std::to_string(w.step)}, {"filename", file}, {"line", 0}});
  return frames;
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

// One entry, keys in the order PyTorch's dump writes them (FlightRecorderDetail.hpp).
Json entry_of(const Plan& plan, const WorkRecord& w, uint32_t id, SimTime t) {
  const FlightRecorderSettings& fr = plan.scenario.job.flight_recorder;
  const bool started = fr.timing() && w.started <= t, completed = w.completed <= t;
  int64_t in = 0, out = 0;
  work_numel(plan, w, &in, &out);
  Json e;
  if (fr.stack_traces()) e["frames"] = frames_of(plan, w);
  e["record_id"] = id;
  e["pg_id"] = static_cast<int>(w.group);
  e["process_group"] = {plan.group_global_name(w.group, plan.group_instance(w.group, w.rank)), pg_desc(w.group)};
  e["thread_name"] = kThreadName;
  e["thread_id"] = std::to_string(kThreadIdBase + 4096 * int64_t{w.rank});
  e["collective_seq_id"] = w.collective_seq_id;
  e["p2p_seq_id"] = w.p2p_seq_id;
  e["op_id"] = w.op_id;
  e["profiling_name"] = profiling_name(plan, w);
  e["time_created_ns"] = w.created.ns;
  if (fr.timing() && completed) e["duration_ms"] = static_cast<double>((w.completed - w.started).ns) / 1e6;
  e["input_sizes"] = Json::array({Json::array({in})});
  e["input_dtypes"] = Json::array({dtype_name(w.dtype)});
  e["output_sizes"] = Json::array({Json::array({out})});
  e["output_dtypes"] = Json::array({dtype_name(w.dtype)});
  e["state"] = completed ? "completed" : started ? "started" : "scheduled";
  e["time_discovered_started_ns"] = time_or_none(fr.timing() ? discovered(w.started, t) : 0);
  e["time_discovered_completed_ns"] = time_or_none(discovered(w.completed, t));
  e["retired"] = completed || w.timed_out;
  e["timeout_ms"] = plan.scenario.job.watchdog ? plan.scenario.job.watchdog->ns / 1'000'000 : 0;
  e["is_p2p"] = w.peer >= 0;
  return e;
}

// The value tree as PyTorch's C++ pickler writes it: a dict is a dict, `process_group`
// a tuple, a frame dict shared by every entry that names it (memoized once), the
// top-level dict memoized last.
void pickle_value(const Json& v, PickleWriter& p, std::map<std::string, uint32_t>* frames, bool tuple) {
  switch (v.type()) {
    case Json::value_t::object:
      p.open_dict();
      for (const auto& [k, x] : v.items()) {
        p.string(k);
        pickle_value(x, p, nullptr, k == "process_group");
      }
      return p.close_dict();
    case Json::value_t::array:
      if (tuple) p.open_tuple(v.size());
      else p.open_list();
      for (const Json& x : v) {
        if (!frames) {
          pickle_value(x, p, nullptr, false);
          continue;
        }
        const std::string key = x.dump();
        if (auto it = frames->find(key); it != frames->end()) {
          p.get(it->second);
        } else {
          pickle_value(x, p, nullptr, false);
          frames->emplace(key, p.memoize());
        }
      }
      return tuple ? p.close_tuple() : p.close_list();
    case Json::value_t::string: return p.string(v.get_ref<const std::string&>());
    case Json::value_t::boolean: return p.boolean(v.get<bool>());
    case Json::value_t::number_float: return p.real(v.get<double>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return p.integer(v.get<int64_t>());
    default: return p.none();
  }
}

std::string to_pickle(const Json& root) {
  PickleWriter p;
  std::map<std::string, uint32_t> frames;
  p.open_dict();
  for (const auto& [k, x] : root.items()) {
    p.string(k);
    if (k != "entries") {
      pickle_value(x, p, nullptr, false);
      continue;
    }
    p.open_list();
    for (const Json& e : x) {
      p.open_dict();
      for (const auto& [ek, ev] : e.items()) {
        p.string(ek);
        pickle_value(ev, p, ek == "frames" ? &frames : nullptr, ek == "process_group");
      }
      p.close_dict();
    }
    p.close_list();
  }
  p.close_dict();
  p.memoize();
  return p.finish();
}

// The same tree as _dump_nccl_trace_json writes it: unknown times 0, pg_status values
// strings, `entries` left out when empty. fleetsim adds `rank` and keeps `frames`.
std::string to_json(const Json& root, int rank) {
  Json out;
  out["version"] = root["version"];
  out["comm_lib_version"] = root["comm_lib_version"];
  out["rank"] = rank;
  out["pg_config"] = root["pg_config"];
  Json status = Json::object();
  for (const auto& [pg, st] : root["pg_status"].items())
    for (const auto& [k, v] : st.items()) status[pg][k] = std::to_string(v.get<int64_t>());
  out["pg_status"] = std::move(status);
  Json entries = root["entries"];
  for (Json& e : entries)
    for (const char* k : {"time_discovered_started_ns", "time_discovered_completed_ns"})
      if (e[k].is_null()) e[k] = 0;
  if (!entries.empty()) out["entries"] = std::move(entries);
  return out.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
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
  Json root;
  root["version"] = "2.10";
  Json pg_config = Json::object(), pg_status = Json::object();
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan_.group_exists(kind)) continue;
    // pg_config is keyed by the group's global name, pg_status by the rank-local
    // pg_id, as PyTorch writes them.
    const std::string id = std::to_string(g);
    const int instance = plan_.group_instance(kind, rank);
    const std::string name = plan_.group_global_name(kind, instance);
    pg_config[name] = {{"name", name}, {"desc", pg_desc(kind)}, {"ranks", ranks_string(plan_, kind, instance)}};
    const size_t i = pg_index(rank, kind);
    pg_status[id] = {{"last_enqueued_collective", last_enq_[i]},
                     {"last_started_collective", fr.timing() ? last_start_[i] : -1},
                     {"last_completed_collective", last_done_[i]}};
  }
  root["pg_config"] = std::move(pg_config);
  root["comm_lib_version"] = "fleetsim-" FLEETSIM_VERSION;
  root["pg_status"] = std::move(pg_status);
  Json entries = Json::array();
  const auto r = static_cast<size_t>(rank);
  const uint32_t n = count_[r];
  for (uint32_t id = n > cap_ ? n - static_cast<uint32_t>(cap_) : 0; id < n; ++id) {
    const WorkRecord& w = ring_[r][id % cap_].w;
    if (fr.only_active() && discovered(w.completed, t)) continue;  // its completion was seen
    entries.push_back(entry_of(plan_, w, id, t));
  }
  root["entries"] = std::move(entries);
  return fr.json() ? to_json(root, rank) : to_pickle(root);
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
