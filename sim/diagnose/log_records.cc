// Reads PyTorch's watchdog records out of a log as torchrun writes it and as users
// paste it: lines a terminal wrapped are joined again, several ranks' records may share
// one line (or a progress bar), and the wording of each release is accepted (fields of
// WorkNCCL(...) in any order, NumelIn/NumelOut absent in old releases, the pg_status
// line as "last enqueued NCCL work: N" or "PG status: last enqueued work: N").
// Hand-written scanning, linear in the log's size, so a huge or hostile log costs
// no more than reading it.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "sim/diagnose/signals.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {
namespace {

constexpr size_t kMinWrapWidth = 40;   // narrower "terminals" are not wrapping, just short lines
constexpr size_t kPrefixReach = 300;   // how far before a record its "[rankN]:" / "[PG ..]" may sit
constexpr size_t kStartWindow = 100;   // where a line must show that it opens a record

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Digits at s[at..] (an optional '-' first); nullopt when none or too long for 64 bits.
std::optional<int64_t> digits_at(std::string_view s, size_t at, size_t* end = nullptr) {
  size_t i = at;
  if (i < s.size() && s[i] == '-') ++i;
  const size_t first = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == first || i - at > 20) return std::nullopt;
  if (end) *end = i;
  return parse_int<int64_t>(std::string(s.substr(at, i - at)));
}

size_t skip_spaces(std::string_view s, size_t i) {
  while (i < s.size() && s[i] == ' ') ++i;
  return i;
}

// A "[rankN]:" prefix that opens s[at..] (torchrun's per-rank tag), its rank or -1.
int rank_prefix_at(std::string_view s, size_t at) {
  if (!starts_with(s.substr(at), "[rank")) return -1;
  size_t end = 0;
  std::optional<int64_t> r = digits_at(s, at + 5, &end);
  if (!r || *r < 0 || *r > INT32_MAX || end + 1 >= s.size() || s[end] != ']' || s[end + 1] != ':') return -1;
  return static_cast<int>(*r);
}

// Whether a physical line opens a record of its own rather than continuing a
// wrapped one: a torchrun rank prefix or glog header near its start, NCCL's own
// prefix, or the lines of a C++ or Python stack.
bool opens_record(std::string_view line) {
  const std::string_view head = line.substr(0, kStartWindow);
  for (size_t at = head.find("[rank"); at != std::string_view::npos; at = head.find("[rank", at + 1)) {
    if (rank_prefix_at(line, at) >= 0) return true;
  }
  if (head.find("ProcessGroupNCCL.cpp") != std::string_view::npos) return true;
  if (head.find(" NCCL INFO ") != std::string_view::npos || head.find(" NCCL WARN ") != std::string_view::npos)
    return true;
  const std::string_view t = line.substr(skip_spaces(line, 0));
  if (t.size() >= 3 && t[0] == '[' && (t[1] == 'E' || t[1] == 'W' || t[1] == 'I') &&
      (t[2] == ' ' || std::isdigit(static_cast<unsigned char>(t[2]))))
    return true;
  for (std::string_view p : {"frame #", "Exception raised", "terminate called", "what():", "Traceback", "File \""}) {
    if (starts_with(t, p)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> logical_lines(const std::vector<std::string>& lines, std::vector<size_t>* first_line) {
  std::vector<std::string> out;
  if (first_line) first_line->clear();
  size_t width = 0;       // the wrapping terminal's width, from the first piece of a record
  size_t last_piece = 0;  // raw length of the last piece appended
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    for (size_t begin = 0; begin <= line.size();) {
      size_t end = line.find('\r', begin);
      if (end == std::string_view::npos) end = line.size();
      const std::string_view piece = line.substr(begin, end - begin);
      const bool continues = !out.empty() && width >= kMinWrapWidth && last_piece == width && !piece.empty() &&
                             !opens_record(piece);
      // A wrapped piece keeps its trailing blank (the terminal broke the line on it);
      // a finished line loses the blanks a terminal pads its last piece with.
      if (continues) {
        out.back().append(piece);
      } else if (!piece.empty() || begin == 0) {
        if (!out.empty()) out.back().resize(rtrim(out.back()).size());
        out.emplace_back(piece);
        if (first_line) first_line->push_back(n + 1);
        width = piece.size();
      }
      last_piece = piece.size();
      begin = end + 1;
    }
  }
  if (!out.empty()) out.back().resize(rtrim(out.back()).size());
  return out;
}

namespace {

struct PgTag {
  std::string pg;
  std::string desc;
  int rank = -1;
};

// "[PG ID 2 PG GUID 9(tp) Rank 7]", "[PG ID 0 PG GUID 0(default_pg) Rank 1]",
// "[PG 0 (default_pg) Rank 12]", "[PG 1 Rank 0]": the last such tag before `before`.
std::optional<PgTag> pg_tag_before(std::string_view s, size_t before) {
  const size_t from = before > kPrefixReach ? before - kPrefixReach : 0;
  const size_t at = s.substr(0, before).rfind("[PG ");
  if (at == std::string_view::npos || at < from) return std::nullopt;
  size_t i = at + 4;
  if (starts_with(s.substr(i), "ID ")) i += 3;
  size_t end = 0;
  if (!digits_at(s, i, &end)) return std::nullopt;
  PgTag tag;
  tag.pg = std::string(s.substr(i, end - i));
  i = end;
  if (starts_with(s.substr(i), " PG GUID ")) {
    i += 9;
    const size_t stop = s.find_first_of("( ]", i);
    if (stop == std::string_view::npos) return std::nullopt;
    tag.pg = std::string(s.substr(i, stop - i));
    i = stop;
  }
  i = skip_spaces(s, i);
  if (i < s.size() && s[i] == '(') {
    const size_t close = s.find(')', i);
    if (close == std::string_view::npos || close > before) return std::nullopt;
    tag.desc = std::string(s.substr(i + 1, close - i - 1));
    i = skip_spaces(s, close + 1);
  }
  if (starts_with(s.substr(i), "Rank ")) {
    if (std::optional<int64_t> r = digits_at(s, i + 5); r && *r >= 0 && *r <= INT32_MAX) tag.rank = static_cast<int>(*r);
  }
  return tag;
}

// The global rank of the record at `before`: the nearest "[rankN]:" prefix that opens
// a glog header ("[rank3]:[E1112 ..."), else the record's own "[Rank N]" (which newer
// releases print as the rank within the group), else -1.
int rank_before(std::string_view s, size_t before) {
  const size_t from = before > kPrefixReach ? before - kPrefixReach : 0;
  for (size_t at = s.substr(0, before).rfind("[rank"); at != std::string_view::npos && at >= from;
       at = at == 0 ? std::string_view::npos : s.substr(0, at).rfind("[rank")) {
    const int r = rank_prefix_at(s, at);
    const size_t colon = s.find("]:", at);
    if (r >= 0 && colon + 3 < s.size() && s[colon + 2] == '[') return r;
  }
  const size_t at = s.substr(0, before).rfind("[Rank ");
  if (at == std::string_view::npos || at < from) return -1;
  std::optional<int64_t> r = digits_at(s, at + 6);
  return r && *r >= 0 && *r <= INT32_MAX ? static_cast<int>(*r) : -1;
}

// The fields of "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1,
// Timeout(ms)=600000)" from the '(' at `open`; `close` gets the final ')'.
bool read_work_fields(std::string_view s, size_t open, WatchdogLine& w, size_t* close) {
  size_t i = open + 1;
  bool seq = false;
  while (i < s.size()) {
    i = skip_spaces(s, i);
    const size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq - i > 16) return false;
    const std::string_view key = s.substr(i, eq - i);
    size_t end = eq + 1;
    while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_' || s[end] == '-'))
      ++end;
    const std::string_view value = s.substr(eq + 1, end - eq - 1);
    if (key == "OpType") {
      w.op_type = std::string(value);
    } else if (key == "SeqNum" || key == "NumelIn" || key == "NumelOut" || key == "Timeout(ms)") {
      std::optional<int64_t> v = parse_int<int64_t>(std::string(value));
      if (!v) return false;
      (key == "SeqNum" ? w.seq : key == "NumelIn" ? w.numel_in : key == "NumelOut" ? w.numel_out : w.timeout_ms) = *v;
      seq = seq || key == "SeqNum";
    }
    if (end >= s.size() || (s[end] != ',' && s[end] != ')')) return false;
    if (s[end] == ')') {
      *close = end;
      return seq && !w.op_type.empty();
    }
    i = end + 1;
  }
  return false;
}

// The record whose "WorkNCCL(" sits at `at`, if the text around it is a timeout.
std::optional<WatchdogLine> record_at(std::string_view s, size_t at) {
  WatchdogLine w;
  size_t close = 0;
  if (!read_work_fields(s, at + 8, w, &close)) return std::nullopt;
  const size_t from = at > kPrefixReach ? at - kPrefixReach : 0;
  const std::string_view before = s.substr(from, at - from);
  const std::string_view after = s.substr(close + 1, 160);
  const bool caught = before.find("Watchdog caught collective operation timeout") != std::string_view::npos;
  const bool blocking = after.find("timed out in blocking wait") != std::string_view::npos;
  if (!caught && !blocking) return std::nullopt;
  if (const size_t ran = after.find("ran for "); ran != std::string_view::npos) {
    if (std::optional<int64_t> ms = digits_at(after, ran + 8)) w.ran_for_ms = *ms;
  }
  w.rank = rank_before(s, at);
  if (std::optional<PgTag> tag = pg_tag_before(s, at)) {
    w.pg = tag->pg;
    w.pg_desc = tag->desc;
    if (w.rank < 0) w.rank = tag->rank;
  }
  return w;
}

// The number after `key` ("last enqueued", then " NCCL"? " work: "), or -1.
int64_t number_after(std::string_view s, std::string_view key, size_t from) {
  const size_t at = s.find(key, from);
  if (at == std::string_view::npos) return -1;
  const size_t colon = s.find(':', at);
  if (colon == std::string_view::npos || colon - at > key.size() + 24) return -1;
  return digits_at(s, skip_spaces(s, colon + 1)).value_or(-1);
}

// "[PG ...] Exception (either an error or timeout) detected by watchdog at work: S,
// last enqueued NCCL work: E, last completed NCCL work: C", "... failure detected by
// watchdog at work sequence id: S PG status: last enqueued work: E, last completed
// work: C", and "[PG ...] Timeout at NCCL work: S, ...".
struct StatusLine {
  size_t line = 0;  // logical line index
  int rank = -1;
  std::string pg, desc;
  int64_t seq = -1, enqueued = -1, completed = -1;
};

void find_status(std::string_view s, size_t line, std::vector<StatusLine>& out) {
  for (std::string_view key : {"detected by watchdog at work", "Timeout at NCCL work"}) {
    for (size_t at = s.find(key); at != std::string_view::npos; at = s.find(key, at + 1)) {
      StatusLine st;
      st.line = line;
      st.seq = number_after(s, key, at);
      st.enqueued = number_after(s, "last enqueued", at);
      st.completed = number_after(s, "last completed", at);
      if (st.seq < 0) continue;
      std::optional<PgTag> tag = pg_tag_before(s, at);
      st.rank = rank_before(s, at);
      if (tag) {
        st.pg = tag->pg;
        st.desc = tag->desc;
        if (st.rank < 0) st.rank = tag->rank;
      }
      out.push_back(st);
    }
  }
}

void find_records(std::string_view s, std::vector<WatchdogLine>& out) {
  for (size_t at = s.find("WorkNCCL("); at != std::string_view::npos; at = s.find("WorkNCCL(", at + 1)) {
    if (std::optional<WatchdogLine> w = record_at(s, at)) out.push_back(*w);
  }
}

// Gives each record its group and pg_status from the status line its rank printed
// for the same sequence number (the record itself names no group in most releases),
// else from the next status line of its rank within a few lines (a p2p record's
// SeqNum counts p2p ops, its status line collectives).
void attach_status(std::vector<WatchdogLine>& records, const std::vector<size_t>& record_line,
                   const std::vector<StatusLine>& status) {
  constexpr size_t kNear = 4;
  std::map<std::pair<int, int64_t>, const StatusLine*> by_rank_seq;
  std::map<int, std::map<size_t, const StatusLine*>> by_rank_line;
  for (const StatusLine& st : status) {
    by_rank_seq.emplace(std::make_pair(st.rank, st.seq), &st);
    by_rank_line[st.rank].emplace(st.line, &st);
  }
  for (size_t i = 0; i < records.size(); ++i) {
    WatchdogLine& w = records[i];
    const StatusLine* found = nullptr;
    if (auto it = by_rank_seq.find({w.rank, w.seq}); it != by_rank_seq.end()) {
      found = it->second;
    } else if (auto lines = by_rank_line.find(w.rank); lines != by_rank_line.end()) {
      auto next = lines->second.lower_bound(record_line[i]);
      if (next != lines->second.end() && next->first <= record_line[i] + kNear) found = next->second;
    }
    if (!found) continue;
    const StatusLine& st = *found;
    if (w.pg.empty()) w.pg = st.pg;
    if (w.pg_desc.empty()) w.pg_desc = st.desc;
    w.last_enqueued = st.enqueued;
    w.last_completed = st.completed;
  }
}

}  // namespace

std::optional<WatchdogLine> parse_watchdog_line(std::string_view line) {
  std::vector<WatchdogLine> found;
  find_records(line, found);
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::vector<WatchdogLine> find_watchdog_lines(const std::vector<std::string>& lines) {
  std::vector<size_t> first_line;
  const std::vector<std::string> logical = logical_lines(lines, &first_line);
  std::vector<WatchdogLine> records;
  std::vector<size_t> record_line;
  std::vector<StatusLine> status;
  for (size_t i = 0; i < logical.size(); ++i) {
    const size_t before = records.size();
    find_records(logical[i], records);
    for (size_t k = before; k < records.size(); ++k) {
      records[k].line_no = first_line[i];
      record_line.push_back(i);
    }
    find_status(logical[i], i, status);
  }
  attach_status(records, record_line, status);
  // One record per (rank, group, seq): the exception text repeats the record.
  std::set<std::tuple<int, std::string, int64_t>> seen;
  std::vector<WatchdogLine> out;
  for (WatchdogLine& w : records) {
    if (seen.insert({w.rank, w.pg, w.seq}).second) out.push_back(std::move(w));
  }
  return out;
}

LogExtras find_log_extras(const std::vector<std::string>& lines) {
  LogExtras x;
  std::set<int> ranks;
  for (const std::string& line : logical_lines(lines)) {
    for (size_t at = line.find("[rank"); at != std::string::npos; at = line.find("[rank", at + 1)) {
      if (const int r = rank_prefix_at(line, at); r >= 0) ranks.insert(r);
    }
    if (line.find("watchdog got stuck for") != std::string::npos ||
        line.find("Received a dump signal") != std::string::npos) {
      x.heartbeat.push_back(line);
    }
    if (line.find(" NCCL WARN ") != std::string::npos) x.nccl_warn.push_back(line);
    if (line.find("have launched up to operation") != std::string::npos ||
        line.find("different collective operation counts") != std::string::npos ||
        line.find("The missing rank") != std::string::npos) {
      x.ras.push_back(line);
    }
  }
  x.ranks_seen.assign(ranks.begin(), ranks.end());
  return x;
}

std::string profiling_name_of_op_type(std::string_view op_type) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"ALLREDUCE", "all_reduce"},           {"ALLREDUCE_COALESCED", "allreduce_coalesced"},
      {"ALLGATHER", "all_gather"},           {"_ALLGATHER_BASE", "_all_gather_base"},
      {"ALLGATHER_COALESCED", "all_gather_coalesced"},
      {"REDUCE_SCATTER", "reduce_scatter"},  {"_REDUCE_SCATTER_BASE", "_reduce_scatter_base"},
      {"ALLTOALL", "all_to_all"},            {"ALLTOALL_BASE", "all_to_all"},
      {"BROADCAST", "broadcast"},            {"REDUCE", "reduce"},
      {"BARRIER", "barrier"},                {"GATHER", "gather"},
      {"SCATTER", "scatter"},                {"SEND", "send"},
      {"RECV", "recv"},                      {"COALESCED", "coalesced"}};
  auto it = kNames.find(op_type);
  if (it != kNames.end()) return "nccl:" + it->second;
  std::string lower(op_type);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "nccl:" + lower;
}

}  // namespace fleetsim::diagnose
