// Walks a folder and fills a Record: summary.json, telemetry.csv, steps.csv, job.log
// and the flight-recorder dumps (under fr/ in a RunRecord, or loose in the folder or a
// folder per host as PyTorch writes them: dump_files.cc), parsed on several threads. CSV columns are found by
// their header names. Each file must be a regular file within its cap
// (fleetsim/file_read.h); an entry that cannot be read (a symlink loop, no
// permission) is a one-line error naming it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "fleetsim/file_read.h"
#include "fleetsim/progress.h"
#include "fleetsim/record.h"
#include "sim/diagnose/dump_simd.h"
#include "sim/diagnose/record.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream ss(line);
  while (std::getline(ss, cell, sep)) out.push_back(cell);
  return out;
}

// The lines of `text` as std::getline splits them, a trailing '\r' dropped.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    begin = end + 1;
  }
  return lines;
}

Result<std::vector<std::string>> read_lines(const fs::path& p) {
  Result<std::string> text = read_file_capped(p.string(), kRecordTextMax, "record file");
  if (!text) return text.errors();
  return split_lines(*text);
}

// A CSV as rows of named cells; rows with the wrong width are skipped.
struct Csv {
  std::map<std::string, size_t> column;
  std::vector<std::vector<std::string>> rows;

  double num(const std::vector<std::string>& row, const char* name) const {
    auto it = column.find(name);
    if (it == column.end() || it->second >= row.size()) return 0;
    return std::strtod(row[it->second].c_str(), nullptr);
  }
  // A cell as an integer of type T; 0, as for a missing column, when it does not
  // fit in T (a rank of 1e10, inf, nan).
  template <class T>
  T whole(const std::vector<std::string>& row, const char* name) const {
    const double v = num(row, name);
    const double lo = static_cast<double>(std::numeric_limits<T>::min());  // -2^(bits-1), exact
    return v >= lo && v < -lo ? static_cast<T>(v) : T{0};
  }
};

Result<Csv> read_csv(const fs::path& p) {
  Csv csv;
  Result<std::vector<std::string>> read = read_lines(p);
  if (!read) return read.errors();
  const std::vector<std::string>& lines = *read;
  if (lines.empty()) return csv;
  std::vector<std::string> header = split(lines[0], ',');
  for (size_t i = 0; i < header.size(); ++i) csv.column[header[i]] = i;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> row = split(lines[i], ',');
    if (row.size() == header.size()) csv.rows.push_back(std::move(row));
  }
  return csv;
}

Result<std::vector<TelemetryRow>> read_telemetry(const fs::path& p) {
  Result<Csv> read = read_csv(p);
  if (!read) return read.errors();
  const Csv& csv = *read;
  std::vector<TelemetryRow> out;
  for (const auto& row : csv.rows) {
    TelemetryRow t;
    t.time_s = csv.num(row, columns::kTimeS);
    t.rank = csv.whole<int>(row, columns::kRank);
    t.gpu_util = csv.num(row, columns::kGpuUtil);
    t.sm_active = csv.num(row, columns::kSmActive);
    t.tensor_active = csv.num(row, columns::kTensorActive);
    t.nic_tx_bytes = csv.num(row, columns::kNicTxBytes);
    t.step = csv.whole<int64_t>(row, columns::kStep);
    out.push_back(t);
  }
  return out;
}

Result<std::vector<StepRow>> read_steps(const fs::path& p) {
  Result<Csv> read = read_csv(p);
  if (!read) return read.errors();
  const Csv& csv = *read;
  std::vector<StepRow> out;
  for (const auto& row : csv.rows) {
    StepRow s;
    s.step = csv.whole<int64_t>(row, columns::kStep);
    s.start_s = csv.num(row, columns::kStartS);
    s.end_s = csv.num(row, columns::kEndS);
    s.duration_s = csv.num(row, columns::kDurationS);
    s.slowest_rank = csv.whole<int>(row, columns::kSlowestRank);
    out.push_back(s);
  }
  return out;
}

Diagnostic folder_error(const std::string& file, const std::string& message) {
  Diagnostic d;
  d.loc.file = file;
  d.message = message;
  return d;
}

int64_t int_or(const json& obj, const char* key, int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_unsigned())
    return it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(it->get<uint64_t>()) : fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? static_cast<int64_t>(d) : fallback;
  }
  if (it->is_string()) return parse_int<int64_t>(it->get_ref<const std::string&>()).value_or(fallback);
  return fallback;
}

std::string str_or(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// A whole JSON file; a syntax error is a Diagnostic at FILE:LINE:COL.
Result<json> read_json_file(const fs::path& p) {
  Result<std::string> text = read_file_capped(p.string(), kRecordJsonMax, "record file");
  if (!text) return text.errors();
  return parse_json_text(*text, p.string());
}

// model.json (sim/observe/model_json.h). Every field is required: a file that is
// there but malformed is bad input, not a model to trust partly.
Result<ModelExpectations> read_model(const fs::path& p) {
  const std::string file = p.string();
  Result<json> parsed = read_json_file(p);
  if (!parsed) return parsed.errors();
  const json& root = *parsed;
  auto bad = [&](const std::string& what) { return folder_error(file, "expected " + what); };
  if (!root.is_object() || !root.contains("collectives") || !root["collectives"].is_array())
    return bad("an object with a 'collectives' list");
  auto is_int = [](const json& o, const char* k) { return o.contains(k) && o[k].is_number_integer(); };
  auto is_str = [](const json& o, const char* k) { return o.contains(k) && o[k].is_string(); };
  if (!is_str(root, "cost_model") || !is_str(root, "scenario_file") || !is_int(root, "gpus_per_node") ||
      root["gpus_per_node"].get<int64_t>() < 1)
    return bad("'cost_model' and 'scenario_file' strings and 'gpus_per_node' >= 1");
  ModelExpectations m;
  m.cost_model = root["cost_model"].get<std::string>();
  m.scenario_file = root["scenario_file"].get<std::string>();
  m.gpus_per_node = static_cast<int>(std::min<int64_t>(root["gpus_per_node"].get<int64_t>(), 1 << 20));
  for (const json& c : root["collectives"]) {
    if (!c.is_object() || !is_str(c, "op_name") || !is_str(c, "op") || !is_str(c, "group") || !is_int(c, "bytes") ||
        !c.contains("healthy") || !c["healthy"].is_array())
      return bad("each collective to have op_name, op, group, bytes and a 'healthy' list");
    ModelCollective mc{c["op_name"].get<std::string>(), c["op"].get<std::string>(), c["group"].get<std::string>(),
                       c["bytes"].get<int64_t>(), {}};
    for (const json& h : c["healthy"]) {
      if (!h.is_object() || !is_int(h, "ranks") || !is_int(h, "nodes") || !is_int(h, "ranks_per_node") ||
          !is_int(h, "time_ns") || h["time_ns"].get<int64_t>() < 0)
        return bad("each healthy entry to have integer ranks, nodes, ranks_per_node and time_ns >= 0");
      mc.healthy.push_back({static_cast<int>(h["ranks"].get<int64_t>()), static_cast<int>(h["nodes"].get<int64_t>()),
                            static_cast<int>(h["ranks_per_node"].get<int64_t>()), h["time_ns"].get<int64_t>()});
    }
    m.collectives.push_back(std::move(mc));
  }
  return m;
}

Result<Summary> read_summary(const fs::path& p) {
  const std::string file = p.string();
  Result<json> parsed = read_json_file(p);
  if (!parsed) return parsed.errors();
  const json& root = *parsed;
  if (!root.is_object()) return folder_error(file, "summary.json must be a JSON object");
  Summary s;
  s.scenario = str_or(root, "scenario");
  s.file = str_or(root, "file");
  s.executor = str_or(root, "executor");
  s.outcome = str_or(root, "outcome");
  s.ranks = static_cast<int>(int_or(root, "ranks", 0));
  s.steps_planned = int_or(root, "steps_planned", 0);
  s.steps_completed = int_or(root, "steps_completed", 0);
  if (root.contains("hang") && root["hang"].is_object()) {
    const json& h = root["hang"];
    s.hang_first_timeout_rank = static_cast<int>(int_or(h, "first_timeout_rank", -1));
    s.hang_process_group = str_or(h, "process_group");
    s.hang_seq = int_or(h, "collective_seq_id", -1);
    s.hang_op = str_or(h, "op");
    s.hang_step = int_or(h, "step", -1);
  }
  if (root.contains("crash") && root["crash"].is_object()) {
    s.crash_rank = static_cast<int>(int_or(root["crash"], "rank", -1));
    s.crash_step = int_or(root["crash"], "step", -1);
  }
  return s;
}

// The job a dump says it belongs to: its world size (the widest group it
// knows) and its groups' names, descriptions and sizes.
struct JobShape {
  int world = 0;
  std::map<std::string, std::pair<std::string, size_t>> groups;  // name -> (desc, size)
};

// What the folder's checks keep from dump to dump: each interned rank list's
// highest rank + 1 (every dump repeats the same lists: the world's alone holds
// every rank), and the first dump's shape.
struct ShapeMemo {
  std::unordered_map<const std::vector<int>*, int> world_of;
  std::optional<JobShape> first;
};

JobShape job_shape(const FrDump& d, ShapeMemo& memo) {
  JobShape s;
  for (const auto& [name, g] : d.groups) {
    if (name.empty()) continue;  // gloo keys pg_config by an empty name: only its last group
    s.groups[name] = {g.desc, g.ranks.size()};
    auto [it, fresh] = memo.world_of.try_emplace(&g.ranks.get(), 0);
    if (fresh)
      for (int r : g.ranks) it->second = std::max(it->second, r + 1);
    s.world = std::max(s.world, it->second);
  }
  return s;
}

// Dumps that cannot all come from one job: two files for one rank, a rank
// outside the world its groups describe, or two world sizes or group layouts.
std::optional<Diagnostic> contradiction(const FrDump& d, const Record& rec, const FrDump* first, ShapeMemo& memo) {
  if (auto it = rec.dumps.find(d.rank); it != rec.dumps.end())
    return folder_error(d.file, "a second dump for rank " + std::to_string(d.rank) + " (also " + it->second.file +
                                    "): dumps of two jobs in one folder? diagnose reads one job's dumps, one per rank");
  if (!first) return std::nullopt;
  if (!memo.first) memo.first = job_shape(*first, memo);
  const JobShape& a = *memo.first;
  const JobShape b = job_shape(d, memo);
  if (a.world > 0 && b.world > 0 && a.world != b.world)
    return folder_error(d.file, "world size " + std::to_string(b.world) + " (from its pg_config), but " + first->file +
                                    " has " + std::to_string(a.world) + ": dumps of two jobs in one folder?");
  for (const auto& [name, shape] : b.groups) {
    auto it = a.groups.find(name);
    if (it == a.groups.end() || it->second == shape) continue;
    return folder_error(d.file, "process group '" + name + "' is '" + shape.first + "' of " +
                                    std::to_string(shape.second) + " ranks, but in " + first->file + " '" +
                                    it->second.first + "' of " + std::to_string(it->second.second) +
                                    ": dumps of two jobs in one folder?");
  }
  const int world = std::max(a.world, b.world);
  if (world > 0 && d.rank >= world)
    return folder_error(d.file, "rank " + std::to_string(d.rank) + " is outside the job's world of " +
                                    std::to_string(world) + " ranks (0 .. " + std::to_string(world - 1) + ")");
  return std::nullopt;
}

// One dump file read into `bytes` (a worker's buffer, reused from file to file: what
// parse_fr_dump returns holds nothing of it) and parsed.
Result<FrDump> read_dump_file(const std::string& p, std::string& bytes) {
  // With simdjson's padding allocated, a JSON dump is parsed in place (no copy).
  if (std::optional<Diagnostic> err =
          read_file_capped_into(p, kRecordJsonMax, "flight-recorder dump", bytes, kJsonReadPadding))
    return *err;
  return parse_fr_dump(bytes, p, rank_from_file_name(fs::path(p).filename().string()).value_or(-1));
}

// The dumps are parsed by `threads` workers, each file read whole into the worker's
// one buffer and parsed; this thread takes the results in path order, as they come, and
// checks and files them one by one, so the record (and the first error) is the
// same whatever the thread count.
std::optional<Diagnostic> read_dumps(const fs::path& dir, Record& rec, int threads) {
  Result<std::vector<std::string>> files = find_dump_files(dir.string());
  if (!files) return files.errors().front();
  const size_t n = files->size();
  std::vector<std::optional<Result<FrDump>>> parsed(n);
  std::mutex mu;
  std::condition_variable ready;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    std::string bytes;  // this worker's file buffer
    for (size_t i = next++; i < n && !stop; i = next++) {
      Result<FrDump> dump = read_dump_file((*files)[i], bytes);
      std::lock_guard<std::mutex> lock(mu);
      parsed[i].emplace(std::move(dump));
      ready.notify_all();
    }
  };
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1)));
  std::vector<std::thread> pool;
  // Several workers: each parses on its own thread, and this one only files the results
  // (cheap next to a parse), so every core parses. One: this thread parses, then files below.
  for (size_t w = 0; workers > 1 && w < workers; ++w) pool.emplace_back(work);
  if (workers <= 1) work();
  std::optional<Diagnostic> err;
  const FrDump* first = nullptr;
  ShapeMemo memo;
  ProgressMeter meter("diagnose", "dumps", static_cast<int64_t>(n));
  for (size_t i = 0; i < n && !err; ++i) {
    meter.update(static_cast<int64_t>(i));
    std::optional<Result<FrDump>> got;
    {
      std::unique_lock<std::mutex> lock(mu);
      ready.wait(lock, [&] { return parsed[i].has_value(); });
      got = std::move(parsed[i]);
      parsed[i].reset();
    }
    Result<FrDump>& dump = *got;
    if (!dump) {
      err = dump.errors().front();
    } else if (auto bad = contradiction(*dump, rec, first ? first : &*dump, memo)) {
      err = bad;
    } else {
      rec.files.push_back((*files)[i]);
      auto placed = rec.dumps.emplace(dump->rank, std::move(*dump));
      if (!first) first = &placed.first->second;
    }
  }
  stop = true;
  for (std::thread& t : pool) t.join();
  return err;
}

// A number after `key` in one trace line, or nullopt.
std::optional<double> trace_number(const std::string& line, const char* key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(line.c_str() + at + std::strlen(key), nullptr);
}

// The text of a `"name":"..."` field in one trace line ("" if none).
std::string trace_name(const std::string& line) {
  const std::string kName = "\"name\":\"";
  const size_t at = line.find(kName);
  if (at == std::string::npos) return "";
  const size_t begin = at + kName.size();
  return line.substr(begin, line.find('"', begin) - begin);
}

// One "X" range on a rank's cpu thread (tid 0): its CPU ops, the last one each rank
// entered, and which ranks ran each op.
void read_cpu_range(const std::string& line, int rank, Record& rec) {
  const std::string kNever = " (never returned)";
  CpuOp op;
  op.name = trace_name(line);
  op.start_s = trace_number(line, "\"ts\":").value_or(0) / 1e6;
  op.dur_s = trace_number(line, "\"dur\":").value_or(0) / 1e6;
  const double step = trace_number(line, "\"step\":").value_or(-1);
  op.step = step >= 0 && step < 9e18 ? static_cast<int64_t>(step) : -1;
  if (op.name.size() > kNever.size() && op.name.compare(op.name.size() - kNever.size(), kNever.size(), kNever) == 0) {
    op.name.resize(op.name.size() - kNever.size());
    op.never_returned = true;
  }
  if (op.name.empty()) return;
  std::vector<int>& ranks = rec.cpu_op_ranks[op.name];
  if (ranks.empty() || ranks.back() != rank) {
    ranks.insert(std::lower_bound(ranks.begin(), ranks.end(), rank), rank);
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  }
  auto last = rec.last_cpu_op.find(rank);
  if (last == rec.last_cpu_op.end() || op.start_s >= last->second.start_s) {
    if (op.step < 0 && last != rec.last_cpu_op.end() && last->second.name == op.name) op.step = last->second.step;
    rec.last_cpu_op[rank] = op;
  }
}

// What trace.json says of each rank's CPU: instants `"name":"fault: stall in X"` on
// its cpu thread (tid 0) and the CPU op ranges there. The trace holds one event per
// line, so a line scan avoids parsing megabytes of JSON.
std::optional<Diagnostic> read_trace_cpu(const fs::path& p, Record& rec) {
  const std::string kMark = "\"name\":\"fault: stall in ";
  Result<std::string> text = read_file_capped(p.string(), kRecordTextMax, "record file");
  if (!text) return text.errors().front();
  std::istringstream in(std::move(*text));
  for (std::string line; std::getline(in, line);) {
    const std::optional<double> pid = trace_number(line, "\"pid\":");
    if (!pid || !(*pid >= 0 && *pid <= std::numeric_limits<int>::max())) continue;
    const int rank = static_cast<int>(*pid);
    if (line.find("\"ph\":\"X\"") != std::string::npos) {
      if (line.find("\"tid\":0,") != std::string::npos) read_cpu_range(line, rank, rec);
      continue;
    }
    const size_t at = line.find(kMark);
    const std::optional<double> ts = trace_number(line, "\"ts\":");
    if (at == std::string::npos || line.find("\"ph\":\"i\"") == std::string::npos || !ts) continue;
    const size_t begin = at + kMark.size();
    std::string where = line.substr(begin, line.find('"', begin) - begin);
    if (const size_t sp = where.find(' '); sp != std::string::npos) where.resize(sp);
    rec.cpu_stuck.emplace(rank, CpuStuck{where, *ts / 1e6});
  }
  return std::nullopt;
}

// Logs beside job.log as users keep them (train.log, rank3.txt, a pasted stderr), in
// name order after job.log. A .txt file counts only when it reads like a training log.
std::optional<Diagnostic> read_other_logs(const fs::path& dir, Record& rec) {
  std::vector<fs::path> logs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string ext = p.extension().string();
    std::error_code type_ec;
    if ((ext == ".log" || ext == ".txt") && p.filename() != output_file_name(OutputFile::kLog) &&
        it->is_regular_file(type_ec))
      logs.push_back(p);
  }
  std::sort(logs.begin(), logs.end());
  for (const fs::path& p : logs) {
    Result<std::vector<std::string>> lines = read_lines(p);
    if (!lines) return lines.errors().front();
    const bool is_log = std::any_of(lines->begin(), lines->end(), [](const std::string& l) {
      return l.find("ProcessGroupNCCL") != std::string::npos || l.find("NCCL WARN") != std::string::npos ||
             l.find("NCCL INFO") != std::string::npos || l.find("[rank") != std::string::npos;
    });
    if (p.extension() == ".txt" && !is_log) continue;
    rec.files.push_back(p.string());
    rec.log_files.emplace_back(rec.log_lines.size(), p.filename().string());
    rec.log_lines.insert(rec.log_lines.end(), lines->begin(), lines->end());
  }
  return std::nullopt;
}

}  // namespace

Result<Record> read_record(const std::string& dir) { return read_record(dir, default_read_threads()); }

int default_read_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n, 1u, 16u));
}

Result<Record> read_record(const std::string& dir, int threads) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return folder_error(dir, "not a readable folder");
  Record rec;
  rec.dir = dir;
  const fs::path root(dir);
  // Present unless absent: an entry whose status cannot be read is present, and its read names the error.
  auto present = [&](OutputFile f) {
    const fs::path p = root / output_file_name(f);
    std::error_code status_ec;
    if (fs::status(p, status_ec).type() == fs::file_type::not_found) return std::optional<fs::path>();
    rec.files.push_back(p.string());
    return std::optional<fs::path>(p);
  };
  if (auto p = present(OutputFile::kSummary)) {
    Result<Summary> s = read_summary(*p);
    if (!s) return s.errors();
    rec.summary = *s;
  }
  if (auto p = present(OutputFile::kModel)) {
    Result<ModelExpectations> m = read_model(*p);
    if (!m) return m.errors();
    rec.model = std::move(*m);
  }
  if (auto p = present(OutputFile::kTelemetry)) {
    auto t = read_telemetry(*p);
    if (!t) return t.errors();
    rec.telemetry = std::move(*t);
  }
  if (auto p = present(OutputFile::kSteps)) {
    auto t = read_steps(*p);
    if (!t) return t.errors();
    rec.steps = std::move(*t);
  }
  if (auto p = present(OutputFile::kLog)) {
    auto t = read_lines(*p);
    if (!t) return t.errors();
    rec.log_lines = std::move(*t);
    rec.log_files.emplace_back(0, p->filename().string());
  }
  if (std::optional<Diagnostic> err = read_other_logs(root, rec)) return *err;
  if (auto p = present(OutputFile::kTrace)) {
    if (std::optional<Diagnostic> err = read_trace_cpu(*p, rec)) return *err;
  }
  const fs::path fr_dir = fs::is_directory(root / "fr", ec) ? root / "fr" : root;
  if (std::optional<Diagnostic> err = read_dumps(fr_dir, rec, threads)) return *err;
  if (rec.files.empty()) {
    return folder_error(dir, "nothing to diagnose: no summary.json, telemetry.csv, steps.csv, "
                             "job.log or flight-recorder dumps (looked for pickle or JSON dumps in the folder, "
                             "fr/ and one level of subfolders: by content, or named like nccl_trace_rank_<r>, "
                             "comm_lib_trace_rank_<r>, _dump_<r>, trace_<r>, rank_<r>, <prefix><r>.json or "
                             "<prefix><r>.pkl)");
  }
  return rec;
}

}  // namespace fleetsim::diagnose
