// The divergence search's lanes (fr_analyzer.cc): each process group instance by
// (name, members), each member's collective entries in it in seq order (an EntryRun),
// filed in one pass over each dump, and the seqs the members hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/diagnose/entry_run.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose::fr_detail {

// One member's view of one group. Its entries sorted by collective_seq_id, one per seq
// (the last in dump order wins): 4 bytes an entry (entry_run.h), where a map node per
// entry cost 48 (at 16,384 ranks, 1.5 GB of the diagnose's peak).
struct Lane {
  bool has_dump = false;
  EntryRun by_seq;
  int64_t max_known = -1;  // highest seq it enqueued (entries or pg_status)
};

struct GroupView {
  std::string name;
  std::string desc;
  std::vector<int> members;
  std::map<int, Lane> lanes;
};

// What the timeout check needs of one dump, read in the lanes' pass: its latest
// timestamp, its newest entry's enqueue time, and where its first entry not completed
// sits (the check reads from there: a ring's unfinished work is its tail).
struct DumpTimes {
  int64_t latest_ns = 0;
  int64_t last_enqueue_ns = 0;
  size_t first_open = 0;
};

// The groups by (name, members), each member's lane filled. A group instance is found
// by its name and its interned member list (one pointer, shared by every dump naming
// the same members), not by comparing the lists; the instances are then put in
// (name, members) order. `times` gets each dump's, in rank order.
std::vector<GroupView> build_groups(const std::map<int, FrDump>& dumps, std::vector<DumpTimes>& times);

// Every seq a member holds or enqueued last, ascending, each once: a flat vector. Where
// the seqs are dense (a ring holds consecutive ones) they are marked in a bitmap over
// their range, one store an entry; sparse ones are sorted.
std::vector<int64_t> seqs_of(const GroupView& v);

}  // namespace fleetsim::diagnose::fr_detail
