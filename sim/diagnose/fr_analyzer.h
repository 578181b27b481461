// Flight-recorder analysis: aligns every process group's entries across its members
// by (group, collective_seq_id), never by name, finds the first divergent sequence
// number and the minority that diverges, whichever rank was read first. Also finds
// the rank that arrives last (a straggler) and a group whose bus bandwidth lags.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/diagnose/entry_run.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {

enum class DivergenceKind { kPresence, kType, kSize, kDtype, kOpName };

// The first sequence number at which the members of one group disagree.
struct Divergence {
  std::string pg_name;
  std::string pg_desc;
  std::vector<int> members;
  int64_t seq = -1;
  DivergenceKind kind = DivergenceKind::kPresence;
  std::vector<int> minority;  // the ranks that differ from the majority
  std::vector<int> majority;
  bool tie = false;                 // no class is strictly larger than the rest
  bool minority_has_entry = false;  // kPresence: the minority holds an op the others lack
  std::string expected;             // the majority's value (mismatches)
  std::string found;                // the minority's value (mismatches)
  std::string op;                   // profiling name at seq (the minority's if it has one)
  std::string op_name;              // frames[0].name of that entry
  std::string when;                 // a rank/step condition on the odd op, if recorded
  bool when_on_minority = false;    // the condition sits on the minority's op
  int shift = 0;          // +1: minority runs one op ahead (extra); -1: one behind (skipped)
  int64_t time_ns = 0;    // earliest enqueue among the entries at seq
  bool p2p = false;       // a send/recv pair: `seq` is the unmatched op's p2p_seq_id
  std::string partner_op; // p2p, partner never posted: the op the minority should have posted
  int64_t step = -1;      // the step of the op shown, when frames record it
  std::string site;       // where the job calls the op shown ("file:line"), or ""
  std::string settled_by; // a one-against-one split decided by other evidence: which, or ""
};

// Most telling first (docs/diagnose.md): a clear majority before a tie, a mismatch
// before an op only some ranks reached, then the earliest; send/recv pairs last.
void sort_divergences(std::vector<Divergence>& divs);

struct TimedOut {
  int rank = -1;
  std::string pg_name;
  int64_t seq = -1;
  std::string op;
  std::string why;  // "retired, not completed" or "older than its timeout"
};

// The wait-for graph over pending collectives: a rank with unfinished work in a group
// waits on the members that never issued that sequence number (pg_status
// last_enqueued below it, or an empty dump) or left no dump. The roots are the ranks
// whose absence explains every wait: waited on, with nothing pending of their own.
// Works on onlyActive dumps (pending work only) and timing-off dumps (every entry
// `scheduled`): pg_status and the pending window are the evidence. Cost is linear in
// the entries plus, per group, its members sorted once.
enum class WaitKind {
  kNeverIssued,       // enqueued below the waited-for seq, nothing pending anywhere: stuck on its CPU
  kNoDump,            // no dump at all: dead, or its dump was not collected
  kIssuedNotFinished, // issued it, never finished it, in every stuck group: a GPU error or dead NIC
  kSkipped            // never issued it but went on to later work, which its peers then wait in
                      // vain for: the first wait of a cycle (it skipped the collective)
};
struct WaitRoot {
  int rank = -1;
  WaitKind kind = WaitKind::kNeverIssued;
  std::string pg_name;  // the group (global name) and seq its peers wait at
  std::string pg_desc;
  int64_t seq = -1;
  std::string op;      // the waiters' op at that seq, if their dumps hold it; p2p: the half never posted
  int64_t last_enqueued = -1;  // the root's own pg_status on that group (-1: none)
  bool p2p = false;            // waited on for a send/recv it never posted: seq is the waiter's p2p_seq_id
  int waiters = 0;             // ranks waiting on it there
  bool minority = true;        // fewer such ranks than waiters there: the odd ones out. Otherwise
                               // the waiters may be the odd ones (they issued an extra op)
};
struct WaitGraph {
  std::vector<WaitRoot> roots;  // by rank
  int waiting = 0;              // ranks with unfinished collectives blocked by a peer
  int stuck_groups = 0;         // group instances where someone waits
};
WaitGraph build_wait_graph(const std::map<int, FrDump>& dumps);
std::string to_string(WaitKind kind);

struct FrFindings {
  std::vector<Divergence> divergences;  // at most one per group, most telling first
  std::vector<int> missing_dumps;       // ranks some pg_config names but with no dump
  std::vector<TimedOut> timed_out;      // non-completed entries past their timeout
  int64_t now_ns = 0;                   // latest timestamp seen in any dump
  std::map<int, int64_t> last_enqueue_ns;  // per rank: its newest entry's enqueue time
  int groups = 0;                          // groups compared
  WaitGraph waits;                         // who waits on whom in the pending window
};

// With `waits` false the wait graph is left empty: a caller that builds it on another
// thread (build_wait_graph reads the dumps only) sets FrFindings::waits itself.
FrFindings analyze_fr(const std::map<int, FrDump>& dumps, bool waits = true);

// The pg_config entry of group `name` in `dump`, or null. gloo's recorder keys
// pg_config by an empty name: when the dump names exactly one group otherwise (in its
// entries and pg_status), that entry is the one.
const FrGroup* group_config(const FrDump& dump, const std::string& name);
// The groups a dump names: pg_config, entries and pg_status (the empty name aliased).
std::vector<std::string> group_names(const FrDump& dump);
// The groups a pass over a dump's entries starts from: where pg_config has no empty key,
// pg_status's and pg_config's names only (`*entries_pending` true: the pass adds the
// non-empty names its entries give, as group_names would); else group_names whole (what
// the empty key stands for depends on the entries' names; `*entries_pending` false).
std::vector<std::string> group_names_before_entries(const FrDump& dump, bool* entries_pending);

// The global peer of a send or recv entry on `rank` ("nccl:send 0->3": group ranks,
// mapped through the group's members), or nullopt for a collective.
struct P2pPeer {
  int peer = -1;
  bool send = false;
};
std::optional<P2pPeer> p2p_peer(const FrEntry& e, int rank, const std::vector<int>& members);

// Send/recv pairs whose counts differ (fr_p2p.cc), one per directed pair; analyze_fr
// appends them after the collective divergences.
std::vector<Divergence> find_p2p_divergences(const std::map<int, FrDump>& dumps);

// The rank whose collectives start last, consistently (others wait for it).
struct LateArriver {
  int rank = -1;
  int late_count = 0;  // sequence numbers at which it arrived last
  int seq_count = 0;   // sequence numbers compared
  double mean_lag_ms = 0;  // how long the others waited for it, on average
};

// A group whose achieved bus bandwidth is far below its siblings of the same kind.
struct SlowGroup {
  std::string pg_name;
  std::string pg_desc;
  std::vector<int> members;
  double busbw_gbps = 0;
  double sibling_busbw_gbps = 0;
};

// The late arriver and the slow group from one alignment of the dumps (the slow group
// only if asked).
struct TimingFindings {
  std::optional<LateArriver> late;
  std::optional<SlowGroup> slow_group;
};
TimingFindings find_timing(const std::map<int, FrDump>& dumps, bool slow_group);

// Group instances whose collectives take far longer than a healthy model expects of
// a healthy fabric. Only when the caller provides the model (a simulator RunRecord).
struct ModelSlowLink {
  std::string pg_name;
  std::string pg_desc;
  std::string op_name;                  // the op of the worst instance (frames[0].name)
  int instances = 0;                    // instances of that kind with timed collectives
  std::vector<std::vector<int>> slow;   // members of each slow instance
  bool all_slow = false;                // every instance is slow: timing cannot localize it
  double achieved_ms = 0;               // worst instance: median last-arrival-to-completion
  double expected_ms = 0;               // the model's healthy time for it
};
struct ModelCheck {
  bool loaded = false;                  // a healthy model judged the record
  std::string text;                     // one line for the evidence ("" if not tried)
  std::optional<ModelSlowLink> slow;
};
class HealthyModel;  // diagnose.h
// Judges the record's timed collectives against `model`; with no model (or no
// dumps) the check is not made.
ModelCheck check_against_model(const Record& rec, const HealthyModel* model);

// Marks the seqs of `run` (entries one a seq, ascending, as EntryRun::keep_last_by_seq
// leaves them) in `seen`, a flag per seq from `lo`: a run of consecutive seqs as one
// range, without reading its entries.
void mark_seqs(const EntryRun& run, int64_t lo, std::vector<uint8_t>& seen);
// The seqs `seen` flags (from `lo`), ascending.
std::vector<int64_t> marked_seqs(const std::vector<uint8_t>& seen, int64_t lo);

// Asks for an entry's cache lines ahead of its read: a walk over thousands of members
// in step reads one entry a member a seq, each in another dump, and waited on each.
inline void prefetch_entry(const FrEntry* e) {
  __builtin_prefetch(e);
  __builtin_prefetch(reinterpret_cast<const char*>(e) + sizeof(FrEntry) - 1);
}

std::string to_string(DivergenceKind kind);
std::string format_ranks(const std::vector<int>& ranks);  // "[0, 5]"

}  // namespace fleetsim::diagnose
