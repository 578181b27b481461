// The evidence diagnose reads: a RunRecord folder (docs/run-record.md) or a folder of
// PyTorch flight-recorder dumps, pickle or JSON (docs/flight-recorder-formats.md). The
// reader accepts the forms PyTorch versions write (integers as numbers or digit
// strings, missing keys, null times) and rejects, as a Diagnostic with file:line:col,
// file and byte offset, or the file, bad input, values of the wrong type, negative
// sequence numbers and dumps that cannot all come from one job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetsim/status.h"
#include "sim/diagnose/symbol.h"

namespace fleetsim::diagnose {

// An entry's facts that many entries share, each kept once per process (symbol.h):
// its group, its tensors' shapes and dtypes, and what its frames say.
struct FrGroupFacts {
  Sym pg_id;
  Sym pg_name;  // process_group[0]
  Sym pg_desc;  // process_group[1]
  int64_t timeout_ms = 0;
  friend bool operator==(const FrGroupFacts&, const FrGroupFacts&) = default;
};
struct FrShape {
  Sym input_sizes;  // canonical JSON text, e.g. "[[3,4]]"
  Sym output_sizes;
  Sym input_dtypes;  // canonical JSON text, e.g. "[\"Float\"]"
  Sym output_dtypes;
  int64_t input_numel = 0;  // product of all input sizes, summed over tensors
  friend bool operator==(const FrShape&, const FrShape&) = default;
};
struct FrCall {
  Sym op_name;  // frames[0].name: the op as the YAML names it ("" if no frames)
  Sym site;     // where the job calls it: "file:line" of the first frame outside torch
                // and the Python runtime ("" if no frames)
  Sym when;     // a frame that carries a rank/step condition ("" if none)
  int64_t step = -1;  // from a "step N" frame (the simulator writes one), -1 if none
  friend bool operator==(const FrCall&, const FrCall&) = default;
};
struct FrFactsHash {
  size_t operator()(const FrGroupFacts& g) const {
    return hash_mix(hash_mix(hash_mix(hash_mix(0, g.pg_id.id()), g.pg_name.id()), g.pg_desc.id()),
                    static_cast<uint64_t>(g.timeout_ms));
  }
  size_t operator()(const FrShape& s) const {
    size_t h = hash_mix(hash_mix(0, s.input_sizes.id()), s.output_sizes.id());
    return hash_mix(hash_mix(h, s.input_dtypes.id()), s.output_dtypes.id());  // numel follows input_sizes
  }
  size_t operator()(const FrCall& c) const {
    return hash_mix(hash_mix(hash_mix(hash_mix(0, c.op_name.id()), c.site.id()), c.when.id()),
                    static_cast<uint64_t>(c.step));
  }
};

using FrGroupId = Interned<FrGroupFacts, FrFactsHash>;
using FrShapeId = Interned<FrShape, FrFactsHash>;
using FrCallId = Interned<FrCall, FrFactsHash>;

// What an entry is, beside its numbers: its group, shapes, call, profiling name and
// state. A job's entries hold few distinct ones, so an entry keeps this tuple's id.
struct FrEntryFacts {
  FrGroupId group;
  FrShapeId shape;
  FrCallId call;
  Sym profiling_name;  // "nccl:all_reduce"
  Sym state;           // scheduled | started | completed
  friend bool operator==(const FrEntryFacts&, const FrEntryFacts&) = default;
};
struct FrEntryFactsHash {
  size_t operator()(const FrEntryFacts& f) const {
    const size_t h = hash_mix(hash_mix(hash_mix(0, f.group.id()), f.shape.id()), f.call.id());
    return hash_mix(hash_mix(h, f.profiling_name.id()), f.state.id());
  }
};
using FrEntryFactsId = Interned<FrEntryFacts, FrEntryFactsHash>;

// One flight-recorder ring entry (PyTorch FlightRecorderDetail.hpp keys), kept as
// the analysis reads it: 56 bytes. Per-entry numbers are fields; what entries share
// (group, shapes, frames, profiling name, state) is one interned tuple (FrEntryFacts),
// its parts interned tuples and symbols (symbol.h) in turn, all read through accessors.
// The keys nothing reads (record_id, frames past what op_name/site/when/step take)
// are not kept.
struct FrEntry {
  int64_t collective_seq_id = -1;
  int64_t p2p_seq_id = -1;
  int64_t time_created_ns = 0;
  int64_t time_discovered_started_ns = 0;    // 0 when not discovered (or null)
  int64_t time_discovered_completed_ns = 0;  // 0 when not discovered (or null)

  const Sym& profiling_name() const { return facts_->profiling_name; }  // "nccl:all_reduce"
  const Sym& state() const { return facts_->state; }  // scheduled | started | completed
  const Sym& pg_id() const { return group().pg_id; }
  const Sym& pg_name() const { return group().pg_name; }
  const Sym& pg_desc() const { return group().pg_desc; }
  int64_t timeout_ms() const { return group().timeout_ms; }
  const Sym& input_sizes() const { return shape().input_sizes; }
  const Sym& output_sizes() const { return shape().output_sizes; }
  const Sym& input_dtypes() const { return shape().input_dtypes; }
  const Sym& output_dtypes() const { return shape().output_dtypes; }
  int64_t input_numel() const { return shape().input_numel; }
  const Sym& op_name() const { return call().op_name; }
  const Sym& site() const { return call().site; }
  const Sym& when() const { return call().when; }
  int64_t step() const { return call().step; }
  std::optional<double> duration_ms() const {
    return has_duration_ ? std::optional<double>(duration_ms_) : std::nullopt;
  }

  const FrEntryFacts& facts() const { return facts_.get(); }
  const FrGroupFacts& group() const { return facts_->group.get(); }
  const FrShape& shape() const { return facts_->shape.get(); }
  const FrCall& call() const { return facts_->call.get(); }
  void set_facts(FrEntryFactsId f) { facts_ = f; }
  void set_facts(const FrEntryFacts& f) { facts_ = FrEntryFactsId(f); }
  void set_duration_ms(std::optional<double> ms) {
    has_duration_ = ms.has_value();
    duration_ms_ = ms.value_or(0);
  }
  // One fact changed, the rest kept (tests and the simulator's own dumps build entries so).
  void set_profiling_name(Sym name) { change([&](FrEntryFacts& f) { f.profiling_name = name; }); }
  void set_state(Sym state) { change([&](FrEntryFacts& f) { f.state = state; }); }
  void set_group(FrGroupId g) { change([&](FrEntryFacts& f) { f.group = g; }); }
  void set_shape(FrShapeId s) { change([&](FrEntryFacts& f) { f.shape = s; }); }
  void set_call(FrCallId c) { change([&](FrEntryFacts& f) { f.call = c; }); }
  void set_group(const FrGroupFacts& g) { set_group(FrGroupId(g)); }
  void set_shape(const FrShape& s) { set_shape(FrShapeId(s)); }
  void set_call(const FrCall& c) { set_call(FrCallId(c)); }
  void set_pg(Sym id, Sym name, Sym desc = Sym()) {
    FrGroupFacts g = group();
    g.pg_id = id;
    g.pg_name = name;
    g.pg_desc = desc;
    set_group(g);
  }
  void set_timeout_ms(int64_t ms) {
    FrGroupFacts g = group();
    g.timeout_ms = ms;
    set_group(g);
  }
  void set_op(Sym op_name, int64_t step = -1, Sym when = Sym(), Sym site = Sym()) {
    set_call(FrCall{op_name, site, when, step});
  }

 private:
  template <class Change>
  void change(Change&& edit) {
    FrEntryFacts f = facts();
    edit(f);
    set_facts(f);
  }

  double duration_ms_ = 0;
  FrEntryFactsId facts_;
  bool has_duration_ = false;

 public:  // after the private fields, so the struct packs into 56 bytes
  bool is_p2p = false;
  bool retired = false;
};
static_assert(sizeof(FrEntry) == 56, "an entry's size is the diagnosis's memory at scale (docs/performance.md)");

// A process group as one rank sees it: pg_config[name] plus its pg_status.
struct FrGroup {
  std::string name;
  std::string desc;
  RankList ranks;  // parsed from the "[0, 1, 2]" string; empty if unknown; shared by every dump
};

struct FrStatus {
  int64_t last_enqueued = -1;
  int64_t last_started = -1;
  int64_t last_completed = -1;
};

// One rank's dump.
struct FrDump {
  int rank = -1;
  std::string file;
  std::string version;
  std::string comm_lib_version;  // `nccl_version` (schema 2.7 to 2.9) or `comm_lib_version` (2.10 on)
  std::map<std::string, FrGroup> groups;   // by pg name
  std::map<std::string, FrStatus> status;  // by pg name (pg_id keys are mapped)
  std::vector<FrEntry> entries;            // oldest first
};

struct TelemetryRow {
  double time_s = 0;
  int rank = 0;
  double gpu_util = 0;  // percent 0..100
  double sm_active = 0;
  double tensor_active = 0;
  double nic_tx_bytes = 0;
  int64_t step = 0;
};

struct StepRow {
  int64_t step = 0;
  double start_s = 0;
  double end_s = 0;
  double duration_s = 0;
  int slowest_rank = -1;
};

// The fields of summary.json that diagnose uses.
struct Summary {
  std::string scenario;
  std::string file;      // the scenario path the simulator ran ("" for real runs)
  std::string executor;  // "sim" for a simulator RunRecord
  std::string outcome;  // completed | hang | crash | deadlock
  int ranks = 0;
  int64_t steps_planned = 0;
  int64_t steps_completed = 0;
  int hang_first_timeout_rank = -1;
  std::string hang_process_group;
  int64_t hang_seq = -1;
  std::string hang_op;
  int64_t hang_step = -1;
  int crash_rank = -1;
  int64_t crash_step = -1;
};

// model.json: the run's cost model's healthy time of each collective of the
// program, per distinct shape of its group kind's instances.
struct ModelShapeTime {
  int ranks = 0, nodes = 0, ranks_per_node = 0;
  int64_t time_ns = 0;
};
struct ModelCollective {
  std::string op_name;  // as the program (and FR frames[0].name) names it
  std::string op;       // profiling name, "nccl:all_reduce"
  std::string group;    // world | tp | dp | pp
  int64_t bytes = 0;
  std::vector<ModelShapeTime> healthy;
};
struct ModelExpectations {
  std::string cost_model;     // "nccl 2.30 tuning model"
  std::string scenario_file;  // what the run was simulated from
  int gpus_per_node = 0;
  std::vector<ModelCollective> collectives;
};

// A rank whose CPU entered an op and never returned, from trace.json (the
// simulator marks it with an instant "fault: stall in <where>" on the cpu thread,
// where a real profiler trace shows a CPU range left open).
struct CpuStuck {
  std::string where;  // "data_loader", "save_checkpoint", ...
  double at_s = 0;    // when it entered
};

// A range on a rank's cpu thread in trace.json (an "X" event on tid 0): a CPU op
// such as a data loader or a checkpoint save. The simulator closes an op that never
// returned with a range named "<op> (never returned)" up to the end of the run.
struct CpuOp {
  std::string name;
  double start_s = 0;
  double dur_s = 0;
  int64_t step = -1;             // its "step" argument, -1 if none
  bool never_returned = false;
};

// Everything found in one folder. Any part may be empty.
struct Record {
  std::string dir;
  std::optional<Summary> summary;
  std::optional<ModelExpectations> model;  // model.json, from a simulated run
  std::vector<TelemetryRow> telemetry;
  std::vector<StepRow> steps;
  std::vector<std::string> log_lines;
  std::vector<std::pair<size_t, std::string>> log_files;  // (first index in log_lines, file name)
  std::map<int, FrDump> dumps;     // by global rank
  std::map<int, CpuStuck> cpu_stuck;  // by global rank, from trace.json
  std::map<int, CpuOp> last_cpu_op;   // by global rank: the CPU op it entered last (trace.json)
  std::map<std::string, std::vector<int>> cpu_op_ranks;  // CPU op name -> the ranks that ran it, ascending
  std::vector<std::string> files;  // what was read, for the evidence
};

// Parses JSON text; a syntax error becomes a Diagnostic at FILE:LINE:COL.
Result<nlohmann::json> parse_json_text(const std::string& text, const std::string& file);

// Parses one FR dump: a pickle when `bytes` start as one (looks_like_pickle), else
// JSON. fallback_rank (the file name's, or -1 for none) is used when the dump has no
// "rank" key; a dump with neither is an error.
Result<FrDump> parse_fr_dump(const std::string& bytes, const std::string& file,
                             int fallback_rank);

// The rank a dump's file name ends in ("nccl_trace_rank_3", "nccl_trace_rank_host1_3",
// "rank_3.json", "trace_3.pkl"), after a .json, .pkl or .pickle extension; nullopt if
// the name ends in no number.
std::optional<int> rank_from_file_name(const std::string& name);

// Whether a file name alone says "flight-recorder dump": a rank number at its end
// and `rank`, `trace` or `dump` in it, or a .json/.pkl/.pickle extension after the number.
bool dump_like_name(const std::string& name);

// A folder's flight-recorder dumps (docs/flight-recorder-formats.md): its files, and
// those one subfolder down, whose name is dump-like or whose content starts as a
// pickle or as a JSON object with flight-recorder keys. In path order; RunRecord files
// (summary.json, ...), hidden entries and dump pipes are passed over.
Result<std::vector<std::string>> find_dump_files(const std::string& dir);

// Converts a byte offset (nlohmann's parse_error::byte, 1-based) into a 1-based
// line and column of text.
SourceLoc loc_from_offset(const std::string& text, size_t byte, const std::string& file);

// Reads a folder. Fails on a missing folder, one with nothing to read, bad JSON,
// or dumps that contradict each other (two for one rank, a rank outside the
// world, two world sizes or group layouts: dumps of two jobs in one folder).
Result<Record> read_record(const std::string& dir);
// As read_record, the dumps parsed by `threads` threads (1: this one alone). The
// record, and the error on bad input, are the same whatever the count.
Result<Record> read_record(const std::string& dir, int threads);
// The threads read_record uses: the machine's hardware threads, 1 to 16.
int default_read_threads();

// With FLEETSIM_PHASES=1 in the environment, each phase of a diagnosis prints its wall
// time and the process's CPU time (every thread) to stderr when it ends, as
// "phase NAME: wall W s, cpu C s"; otherwise it costs two compares. Never on stdout.
class PhaseTimer {
 public:
  explicit PhaseTimer(const char* name);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* name_;
  double wall_s_ = 0;
  double cpu_s_ = 0;
};

}  // namespace fleetsim::diagnose
