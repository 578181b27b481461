// fleetsim diagnose: walks the on-call isolation order (hang or slow? utilization,
// watchdog lines and pg_status, flight-recorder alignment, culprit, fix) over the
// evidence in one folder and names the culprit rank, op and sequence number.
// Deterministic: the same folder always gives the same Diagnosis, whatever the
// order in which its files are listed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cause.h"
#include "fleetsim/status.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {

enum class Verdict { kHealthy, kSlow, kHang };

// The causes and their names live in one table: include/fleetsim/cause.h.
using fleetsim::Cause;

std::string_view to_string(Verdict v);  // "hang" | "slow" | "healthy"
std::string_view to_string(Cause c);    // "extra_collective", ..., "none"

// One line of evidence, tagged with the isolation-order step (1..6) that used it.
struct Evidence {
  int step = 0;
  std::string text;
};

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
  std::string advice;              // what to do next / the fix
};

// Walks the isolation order over an already-read record.
Diagnosis diagnose_record(const Record& record);

// Reads `dir` (RunRecord or FR dump folder) and diagnoses it. Fails only on bad
// input: a missing/unreadable folder, nothing to read, or malformed JSON.
Result<Diagnosis> diagnose_dir(const std::string& dir);

// The human report: numbered steps with their evidence, then Verdict/Cause/
// Culprit/Where/Fix lines.
std::string format_human(const Diagnosis& d);

// One JSON object (pretty-printed) with verdict, cause, culprit_ranks,
// process_group, collective_seq_id, op, evidence and advice.
std::string format_json(const Diagnosis& d);

}  // namespace fleetsim::diagnose
