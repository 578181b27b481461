// The nccl-tests log reader (see nccl_tests_log.h): a line-by-line state
// machine over header lines, the column header, rows and the closing
// `# Avg bus bandwidth` line, with the collective found from the program name,
// the file name or, failing both, the column layout and busbw/algbw.
#include "sim/io/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

namespace fleetsim {

namespace {

struct Name {
  const char* nccl_tests;
  std::optional<OpKind> op;
};
// The *_perf programs nccl-tests builds; gather, scatter and hypercube are not modelled.
constexpr Name kPrograms[] = {
    {"all_reduce", OpKind::kAllReduce}, {"all_gather", OpKind::kAllGather}, {"reduce_scatter", OpKind::kReduceScatter},
    {"broadcast", OpKind::kBroadcast},  {"reduce", OpKind::kReduce},        {"alltoall", OpKind::kAllToAll},
    {"sendrecv", OpKind::kSend},        {"gather", std::nullopt},           {"scatter", std::nullopt},
    {"hypercube", std::nullopt}};

struct Tok {
  std::string_view text;
  int col = 0;  // 1-based column in the original line
};

std::vector<Tok> tokens(std::string_view s, int col0) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back({s.substr(b, i - b), col0 + static_cast<int>(b) + 1});
  }
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<int64_t> to_int(std::string_view s) {
  int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// mpirun's "[1,0]<stdout>:" (OpenMPI --tag-output) in front of a line.
size_t prefix_length(std::string_view s) {
  if (s.empty() || s[0] != '[') return 0;
  const size_t close = s.find("]<std");
  if (close == std::string_view::npos || close > 24) return 0;
  const size_t colon = s.find(">:", close);
  return colon == std::string_view::npos ? 0 : colon + 2;
}

// The program named by the last "<name>_perf" in `s` ("all_reduce" in
// "./build/all_reduce_perf -b 8"), or "".
std::string program_in(std::string_view s) {
  std::string found;
  for (size_t at = s.find("_perf"); at != std::string_view::npos; at = s.find("_perf", at + 1)) {
    size_t b = at;
    while (b > 0 && (std::isalnum(static_cast<unsigned char>(s[b - 1])) || s[b - 1] == '_')) --b;
    const std::string_view id = s.substr(b, at - b);
    for (const Name& n : kPrograms)
      if (id == n.nccl_tests) found = n.nccl_tests;
  }
  return found;
}

// The collective a file name names ("dgx-h100-all_reduce.log"), or "".
std::string program_in_file_name(const std::string& file) {
  std::string base = std::filesystem::path(file).filename().string(), squashed;
  for (char c : base)
    if (c != '_' && c != '-') squashed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Name& n : kPrograms) {
    std::string key = n.nccl_tests;
    key.erase(std::remove(key.begin(), key.end(), '_'), key.end());
    if (key == "reduce" && (squashed.find("allreduce") != std::string::npos ||
                            squashed.find("reducescatter") != std::string::npos))
      continue;
    if (key == "gather" && squashed.find("allgather") != std::string::npos) continue;
    if (squashed.find(key) != std::string::npos) return n.nccl_tests;
  }
  return "";
}

// "2.6.4" from "NCCL version 2.6.4+cuda10.2" anywhere in `s`.
std::string nccl_version_in(std::string_view s) {
  const size_t at = s.find("NCCL version ");
  if (at == std::string_view::npos) return "";
  size_t e = at + 13;
  while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.')) ++e;
  return std::string(s.substr(at + 13, e - at - 13));
}

// "2.30.3" from nccl-tests' "nccl-library=23003" (NCCL_VERSION_CODE).
std::string library_version_in(std::string_view s) {
  const size_t at = s.find("nccl-library=");
  if (at == std::string_view::npos) return "";
  size_t e = at + 13;
  while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
  const auto code = to_int(s.substr(at + 13, e - at - 13));
  if (!code || *code <= 0) return "";
  const int64_t c = *code;
  const int64_t major = c >= 10000 ? c / 10000 : c / 1000;
  const int64_t minor = c >= 10000 ? c % 10000 / 100 : c % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(c % 100);
}

}  // namespace

std::optional<OpKind> op_from_nccl_tests_name(std::string_view name) {
  for (const Name& n : kPrograms)
    if (name == n.nccl_tests) return n.op;
  return std::nullopt;
}

const char* nccl_tests_name(OpKind op) {
  for (const Name& n : kPrograms)
    if (n.op == op) return n.nccl_tests;
  return op == OpKind::kRecv ? "sendrecv" : "?";
}

double nccl_tests_busbw_factor(OpKind op, int ranks) {
  const double n = std::max(1, ranks);
  switch (op) {
    case OpKind::kAllReduce: return 2.0 * (n - 1) / n;
    case OpKind::kAllGather: case OpKind::kReduceScatter: case OpKind::kAllToAll: return (n - 1) / n;
    default: return 1.0;
  }
}

namespace {

class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) { reset(); }

  std::optional<Diagnostic> line(std::string_view raw, int number);
  std::optional<Diagnostic> finish(int last_line);
  std::vector<NcclTestsTable> tables;

 private:
  Diagnostic error(int line, int col, std::string msg) const {
    Diagnostic d;
    d.loc.file = file_;
    d.loc.line = line;
    d.loc.col = col;
    d.message = std::move(msg);
    return d;
  }
  void reset() {
    cur_ = NcclTestsTable{};
    cur_.file = file_;
    ranks_.clear();
    open_ = false;
    hint_.clear();
  }
  std::optional<Diagnostic> comment(const std::vector<Tok>& t, std::string_view s, int number);
  void rank_line(const std::vector<Tok>& t, std::string_view s);
  std::optional<Diagnostic> column_header(std::vector<Tok> t, int number);
  std::optional<Diagnostic> row(const std::vector<Tok>& t, std::string_view s, int col0, int number);
  std::optional<Diagnostic> close(int number);
  void resolve_op();
  std::optional<Diagnostic> check_ratio() const;
  int index(std::string_view name, int nth = 0) const {
    for (size_t i = 0; i < cur_.columns.size(); ++i)
      if (cur_.columns[i] == name && nth-- == 0) return static_cast<int>(i);
    return -1;
  }

  // busbw over size/time: nccl-tests' factor as this table applied it (older
  // releases folded it into algbw too, so algbw is no reference).
  static double observed_factor(const NcclTestsRow& r) {
    return r.busbw_GBps * r.time_us * 1e3 / static_cast<double>(r.bytes);
  }
  // The row whose busbw has the most printed digits (nullptr if all are below 0.5 GB/s).
  const NcclTestsRow* widest_row() const {
    const NcclTestsRow* best = nullptr;
    for (const NcclTestsRow& r : cur_.rows)
      if (r.bytes > 0 && r.busbw_GBps >= 0.5 && (!best || r.busbw_GBps > best->busbw_GBps)) best = &r;
    return best;
  }
  // Within the rounding of busbw (2 decimals) and time (4 digits), plus 3%.
  bool factor_matches(const NcclTestsRow& r, OpKind op) const {
    const double f = nccl_tests_busbw_factor(op, cur_.ranks), seen = observed_factor(r);
    return std::abs(seen - f) <= (0.03 + 0.006 / r.busbw_GBps) * std::max(f, seen);
  }

  std::string file_;
  NcclTestsTable cur_;
  std::set<int> ranks_;
  bool open_ = false;       // a column header was read; the table has not closed yet
  std::string hint_;        // the program named before the table
  std::string redop_, root_;  // the first row's redop and root ("" if no such column)
};

std::optional<Diagnostic> Parser::line(std::string_view raw, int number) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  const size_t skip = prefix_length(raw);
  const std::string_view s = raw.substr(skip);
  const int col0 = static_cast<int>(skip);
  if (cur_.nccl_version.empty()) {
    if (std::string v = nccl_version_in(s); !v.empty()) cur_.nccl_version = v;
    else if (std::string lv = library_version_in(s); !lv.empty()) cur_.nccl_version = lv;
  }
  if (s.find(" NCCL INFO ") != std::string_view::npos || s.find(" NCCL WARN ") != std::string_view::npos ||
      s.find(" NCCL TRACE ") != std::string_view::npos)
    return std::nullopt;
  const std::vector<Tok> t = tokens(s, col0);
  if (t.empty()) return std::nullopt;
  if (t[0].text[0] == '#') return comment(t, s, number);
  if (all_digits(t[0].text)) return open_ ? row(t, s, col0, number) : std::nullopt;
  if (!open_ && s.find("concluded") == std::string_view::npos)
    if (std::string p = program_in(s); !p.empty()) hint_ = p;
  return std::nullopt;
}

std::optional<Diagnostic> Parser::comment(const std::vector<Tok>& t, std::string_view s, int number) {
  std::vector<Tok> w = t;  // the words after the '#'
  const size_t hashes = w[0].text.find_first_not_of('#');
  if (hashes == std::string_view::npos) {
    w.erase(w.begin());
  } else {
    w[0].text.remove_prefix(hashes);
  }
  if (w.empty()) return std::nullopt;
  if (w[0].text == "Avg" && w.size() > 1 && w[1].text == "bus") {
    if (!open_) return std::nullopt;
    for (size_t i = 1; i + 1 < w.size(); ++i)
      if (w[i].text == ":") cur_.avg_busbw_GBps = to_double(w[i + 1].text);
    return close(number);
  }
  if (w[0].text == "Out" && w.size() > 5 && open_) {
    if (const auto v = to_int(w[5].text)) cur_.out_of_bounds = static_cast<int>(*v);
    return std::nullopt;
  }
  if (w[0].text == "nThread") {
    if (open_)
      return error(number, t[0].col, "a new run starts before the table at line " + std::to_string(cur_.line) +
                                         " ended with '# Avg bus bandwidth' (a truncated log?)");
    cur_.hosts.clear();  // the device lines that follow describe this run
    cur_.gpu.clear();
    cur_.mixed_gpus = false;
    cur_.ranks = cur_.ranks_listed = 0;
    cur_.gpus_per_thread = 1;
    ranks_.clear();
    for (size_t i = 1; i + 1 < w.size(); ++i) {
      if (w[i].text != "nGpus") continue;
      const auto g = to_int(w[i + 1].text);
      if (!g || *g < 1 || *g > 1024)
        return error(number, w[i + 1].col, "expected the GPUs per thread after 'nGpus' (1 to 1024), got '" +
                                               std::string(w[i + 1].text) + "'");
      cur_.gpus_per_thread = static_cast<int>(*g);
    }
    return std::nullopt;
  }
  if (w[0].text == "Rank" && !open_) {
    rank_line(w, s);
    return std::nullopt;
  }
  if (w[0].text == "size" && w.size() > 4) return column_header(w, number);
  if (!open_ && s.find("concluded") == std::string_view::npos)
    if (std::string p = program_in(s); !p.empty()) hint_ = p;
  return std::nullopt;
}

// "Rank  0 Group  0 Pid 1006102 on pool0-01806 device  0 [0000:19:00] NVIDIA H100 80GB HBM3"
// (older releases print no Group). Lines in any other shape are left alone.
void Parser::rank_line(const std::vector<Tok>& w, std::string_view s) {
  if (w.size() < 2 || !all_digits(w[1].text)) return;
  size_t on = 0, bracket = 0;
  for (size_t i = 2; i < w.size(); ++i) {
    if (w[i].text == "on" && !on) on = i;
    if (w[i].text.front() == '[' && w[i].text.back() == ']' && on) bracket = i;
  }
  if (!on || on + 1 >= w.size()) return;
  const auto rank = to_int(w[1].text);
  if (!rank || *rank > 1'000'000'000) return;
  ranks_.insert(static_cast<int>(*rank));
  cur_.ranks_listed = static_cast<int>(ranks_.size());
  cur_.ranks = std::max(cur_.ranks_listed, *ranks_.rbegin() + 1);
  const std::string host(w[on + 1].text);
  if (std::find(cur_.hosts.begin(), cur_.hosts.end(), host) == cur_.hosts.end()) cur_.hosts.push_back(host);
  if (!bracket) return;
  const size_t from = static_cast<size_t>(w[bracket].text.data() - s.data()) + w[bracket].text.size();
  std::string name(s.substr(from));
  const size_t b = name.find_first_not_of(" \t"), e = name.find_last_not_of(" \t");
  name = b == std::string::npos ? "" : name.substr(b, e - b + 1);
  if (cur_.gpu.empty()) cur_.gpu = name;
  else if (name != cur_.gpu) cur_.mixed_gpus = true;
}

std::optional<Diagnostic> Parser::column_header(std::vector<Tok> w, int number) {
  if (open_ && !cur_.rows.empty())
    return error(number, w[0].col, "a new table header before the table at line " + std::to_string(cur_.line) +
                                       " ended with '# Avg bus bandwidth' (a truncated log?)");
  cur_.columns.clear();
  for (const Tok& x : w) cur_.columns.emplace_back(x.text);
  for (const char* need : {"count", "time", "algbw", "busbw"})
    if (index(need) < 0)
      return error(number, w[0].col, std::string("column header without '") + need +
                                         "' (expected nccl-tests' 'size count type ... time algbw busbw' header)");
  cur_.line = number;
  open_ = true;
  return std::nullopt;
}

std::optional<Diagnostic> Parser::row(const std::vector<Tok>& t, std::string_view s, int col0, int number) {
  const size_t want = cur_.columns.size();
  if (t.size() < want)
    return error(number, col0 + static_cast<int>(s.size()) + 1,
                 "truncated row: " + std::to_string(t.size()) + " of the " + std::to_string(want) +
                     " columns of the header at line " + std::to_string(cur_.line));
  if (t.size() > want)
    return error(number, t[want].col, "row has " + std::to_string(t.size()) + " columns, the header at line " +
                                          std::to_string(cur_.line) + " has " + std::to_string(want));
  NcclTestsRow r;
  r.line = number;
  auto number_at = [&](int i, const char* what, double* out) -> std::optional<Diagnostic> {
    const auto v = to_double(t[static_cast<size_t>(i)].text);
    if (!v) return error(number, t[static_cast<size_t>(i)].col,
                         std::string("expected ") + what + " as a number >= 0, got '" +
                             std::string(t[static_cast<size_t>(i)].text) + "'");
    *out = *v;
    return std::nullopt;
  };
  const auto bytes = to_int(t[0].text);
  const auto count = to_int(t[static_cast<size_t>(index("count"))].text);
  if (!bytes) return error(number, t[0].col, "size out of range: '" + std::string(t[0].text) + "'");
  if (!count) return error(number, t[static_cast<size_t>(index("count"))].col, "expected the element count");
  r.bytes = *bytes;
  r.count = *count;
  if (auto e = number_at(index("time"), "the out-of-place time (us)", &r.time_us)) return e;
  if (auto e = number_at(index("algbw"), "algbw (GB/s)", &r.algbw_GBps)) return e;
  if (auto e = number_at(index("busbw"), "busbw (GB/s)", &r.busbw_GBps)) return e;
  if (r.time_us <= 0) return error(number, t[static_cast<size_t>(index("time"))].col, "the time must be > 0");
  if (index("time", 1) >= 0) {  // in-place: "N/A" where not measured
    r.in_place_time_us = to_double(t[static_cast<size_t>(index("time", 1))].text);
    if (index("algbw", 1) >= 0) r.in_place_algbw_GBps = to_double(t[static_cast<size_t>(index("algbw", 1))].text);
    if (index("busbw", 1) >= 0) r.in_place_busbw_GBps = to_double(t[static_cast<size_t>(index("busbw", 1))].text);
  }
  if (cur_.rows.empty()) {
    redop_ = index("redop") >= 0 ? std::string(t[static_cast<size_t>(index("redop"))].text) : "";
    root_ = index("root") >= 0 ? std::string(t[static_cast<size_t>(index("root"))].text) : "";
  }
  cur_.rows.push_back(r);
  return std::nullopt;
}

// Which collective the layout and busbw allow: a reduction has a redop other
// than "none", a rooted op a root other than -1; busbw over size/time is
// nccl-tests' factor (2(n-1)/n, (n-1)/n or 1). Unique or nothing.
void Parser::resolve_op() {
  std::string name = hint_, source = "program name";
  if (name.empty()) name = program_in_file_name(file_), source = "file name";
  if (!name.empty()) {
    cur_.op_name = name;
    cur_.op = op_from_nccl_tests_name(name);
    cur_.op_source = source;
    return;
  }
  const bool reducing = !redop_.empty() && redop_ != "none";
  const bool rooted = !root_.empty() && root_ != "-1";
  const NcclTestsRow* best = widest_row();
  auto matches = [&](OpKind op) { return !best || cur_.ranks <= 0 || factor_matches(*best, op); };
  std::vector<OpKind> fit;
  const std::pair<OpKind, bool> shapes[] = {
      {OpKind::kAllReduce, reducing && !rooted},  {OpKind::kReduceScatter, reducing && !rooted},
      {OpKind::kAllGather, !reducing && !rooted}, {OpKind::kAllToAll, !reducing && !rooted},
      {OpKind::kBroadcast, !reducing && rooted},  {OpKind::kReduce, reducing && rooted},
      {OpKind::kSend, !rooted}};
  for (const auto& [op, layout] : shapes)
    if (layout && matches(op)) fit.push_back(op);
  if (fit.size() == 1) {
    cur_.op = fit[0];
    cur_.op_name = nccl_tests_name(fit[0]);
    cur_.op_source = "column layout";
  }
}

// A named collective must agree with the table's busbw factor on its rank count.
std::optional<Diagnostic> Parser::check_ratio() const {
  const NcclTestsRow* best = widest_row();
  if (!cur_.op || cur_.ranks <= 0 || !best || factor_matches(*best, *cur_.op)) return std::nullopt;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "busbw is %.3f x size/time at line %d, but %s on %d ranks gives %.3f (the %s names %s): "
                "a wrong collective or rank count",
                observed_factor(*best), best->line, cur_.op_name.c_str(), cur_.ranks,
                nccl_tests_busbw_factor(*cur_.op, cur_.ranks), cur_.op_source.c_str(), cur_.op_name.c_str());
  return error(cur_.line, 1, buf);
}

std::optional<Diagnostic> Parser::close(int number) {
  if (cur_.rows.empty())
    return error(number, 1, "the table at line " + std::to_string(cur_.line) + " has no rows");
  resolve_op();
  if (auto e = check_ratio()) return e;
  tables.push_back(std::move(cur_));
  reset();
  return std::nullopt;
}

std::optional<Diagnostic> Parser::finish(int last_line) {
  if (open_)
    return error(last_line, 1, "the table at line " + std::to_string(cur_.line) +
                                   " ends without nccl-tests' closing '# Avg bus bandwidth' line (a truncated log?)");
  if (tables.empty()) {
    Diagnostic d;
    d.loc.file = file_;
    d.message = "no nccl-tests table found (expected a '#  size  count  type ... time  algbw  busbw' header, "
                "its rows and '# Avg bus bandwidth')";
    return d;
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<NcclTestsTable>> parse_nccl_tests_log(std::string_view text, const std::string& file) {
  Parser p(file);
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    if (auto e = p.line(text.substr(start, end - start), number)) return *e;
    start = end + 1;
  }
  if (auto e = p.finish(std::max(number, 1))) return *e;
  return std::move(p.tables);
}

Result<std::vector<NcclTestsTable>> read_nccl_tests_log(const std::string& path) {
  Result<std::string> text = read_file_capped(path, kNcclTestsLogMax, "nccl-tests log");
  if (!text.ok()) return text.errors();
  return parse_nccl_tests_log(*text, path);
}

}  // namespace fleetsim
