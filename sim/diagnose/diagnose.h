// fleetsim diagnose: walks the on-call isolation order (hang or slow? utilization,
// watchdog lines and pg_status, flight-recorder alignment, culprit, fix) over the
// evidence in one folder and names the culprit rank, op and sequence number.
// Deterministic: the same folder always gives the same Diagnosis, whatever the
// order in which its files are listed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cause.h"
#include "fleetsim/status.h"
#include "sim/diagnose/blocked_op.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {

// kCrash: the job ended because a rank's process died (summary.json's outcome), the
// others' stuck collectives being consequences; kHang: the job stopped, all alive.
enum class Verdict { kHealthy, kSlow, kHang, kCrash };
// Whether the job stopped (hung, or ended by a crash), as opposed to ran slow or well.
constexpr bool stopped(Verdict v) { return v == Verdict::kHang || v == Verdict::kCrash; }

// The causes and their names live in one table: include/fleetsim/cause.h.
using fleetsim::Cause;

std::string_view to_string(Verdict v);  // "hang" | "slow" | "healthy"
std::string_view to_string(Cause c);    // "extra_collective", ..., "none"

// One line of evidence, tagged with the isolation-order step (1..6) that used it.
// One line of evidence under a section of the walk: 1 hang or slow, 2 utilization,
// 3 watchdog lines and pg_status, 4 the flight recorder, 5 the culprit, 6 the fix.
struct Evidence {
  int step = 0;  // the section
  std::string text;
};

// The isolation-order step (include/fleetsim/isolation.h) a section of the walk
// belongs to: sections 1-3 are steps 1-3, the flight recorder (4) is step 5; the
// culprit and the fix (5, 6) are conclusions, not steps: 0.
constexpr int isolation_step_of(int section) { return section >= 1 && section <= 3 ? section : section == 4 ? 5 : 0; }

struct Diagnosis {
  Verdict verdict = Verdict::kHealthy;
  Cause cause = Cause::kNone;
  std::vector<int> culprit_ranks;  // ascending; empty when nobody is singled out
  std::string pg_name;             // process group of the divergence ("0"), or ""
  std::string pg_desc;             // its description ("default_pg", "tp")
  int64_t collective_seq_id = -1;  // -1 when unknown
  int64_t p2p_seq_id = -1;         // a p2p divergence: the unmatched op's p2p_seq_id, else -1
  std::string op;                  // profiling name, e.g. "nccl:all_reduce"
  std::string op_name;             // the op as the YAML names it (frames[0].name), or ""
  std::vector<Evidence> evidence;  // in isolation-order step order
  std::optional<BlockedOp> blocked_op;  // the op that blocked, when the evidence names it
  std::string advice;              // what to do next / the fix
};

// One collective as a record's flight recorder shows it on one group instance.
struct GroupCollective {
  std::string op_name;         // the op as the program names it (FR frames[0].name)
  std::string profiling_name;  // e.g. "nccl:all_reduce"
  std::string group_kind;      // "world", "tp", "dp" or "pp" (from the pg description)
  std::vector<int> members;    // the group's global ranks, as pg_config lists them
};

// What a healthy fabric would take for a record's collectives: the expectation that
// slow links are judged against. A simulated record carries one (model.json, see
// recorded_model); without one, groups are judged against their siblings. diagnose
// never reloads a scenario or builds a cost model itself.
class HealthyModel {
 public:
  virtual ~HealthyModel();
  // The healthy-fabric time (ms) of one collective of `c`, or nullopt when the model
  // cannot say (no such op or group in the run's program).
  virtual std::optional<double> healthy_ms(const GroupCollective& c) const = 0;
  // What the expectation comes from, e.g. "nccl 2.30 tuning model, scenarios/x.yaml".
  virtual std::string describe() const = 0;
};

// The healthy model a simulated record carries (its model.json), or null (real
// dumps, records from other tools). It refers to `rec`, which must outlive it.
std::unique_ptr<HealthyModel> recorded_model(const Record& rec);

// Walks the isolation order over an already-read record. With a `model`, each group
// instance's collective times are judged against it; without one, groups are
// judged against their siblings. Neither is used when the record holds no
// flight-recorder dumps.
Diagnosis diagnose_record(const Record& record, const HealthyModel* model = nullptr);

// Reads `dir` (RunRecord or FR dump folder) and diagnoses it, judging slow links
// against the record's own model.json when it has one. Fails only on bad input:
// a missing/unreadable folder, nothing to read, or malformed JSON.
Result<Diagnosis> diagnose_dir(const std::string& dir);

// The human report: numbered steps with their evidence, then Verdict/Cause/
// Culprit/Where/Fix lines.
std::string format_human(const Diagnosis& d);

// One JSON object (pretty-printed) with verdict, cause, culprit_ranks,
// process_group, collective_seq_id, op, evidence and advice.
std::string format_json(const Diagnosis& d);

}  // namespace fleetsim::diagnose
