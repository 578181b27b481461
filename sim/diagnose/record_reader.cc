// Reads one flight-recorder dump, pickle (pickle_reader.h) or JSON (the template reader,
// else simdjson, else nlohmann's SAX pass), into an FrDump. An entry's values (a pickle's
// or a JSON reader's arena nodes read in place, or the SAX pass's JSON values:
// slot_value.h) are read by one set of rules (parse_entry, record_entry.cc) as soon as
// the entry is parsed. JSON errors are located at FILE:LINE:COL, pickle ones by path.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_reader.h"
#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/dump_simd.h"
#include "sim/diagnose/dump_template.h"
#include "sim/diagnose/json_path.h"
#include "sim/diagnose/pickle_reader.h"
#include "sim/diagnose/record.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {

namespace {

using nlohmann::json;
using namespace record_detail;

std::string parse_error_text(const std::string& what) {
  // nlohmann: "[json.exception.parse_error.101] parse error at line 2, column 8: MSG"
  const size_t col = what.find("column ");
  const size_t colon = col == std::string::npos ? col : what.find(": ", col);
  if (colon != std::string::npos) return "malformed JSON: " + what.substr(colon + 2);
  return "malformed JSON: " + what;
}

Diagnostic file_error(const std::string& file, const std::string& message) {
  Diagnostic d;
  d.loc.file = file;
  d.message = message;
  return d;
}

// Runs `parse` (a nlohmann parse of `text`), its syntax errors as Diagnostics at FILE:LINE:COL.
template <class Parse>
Result<json> parse_json_with(const std::string& text, const std::string& file, const Parse& parse) {
  try {
    return parse();
  } catch (const json::parse_error& e) {
    Diagnostic d;
    d.loc = loc_from_offset(text, e.byte, file);
    d.message = parse_error_text(e.what());
    return d;
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e999"). nlohmann quotes the token but not its
    // place: the diagnostic points at the token's first occurrence.
    const std::string what = e.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    const std::string token = open < close ? what.substr(open + 1, close - open - 1) : "";
    const size_t at = token.empty() ? std::string::npos : text.find(token);
    Diagnostic d;
    d.loc = loc_from_offset(text, at == std::string::npos ? 0 : at + 1, file);
    d.message = "malformed JSON: number out of range" + (token.empty() ? "" : ": " + token);
    return d;
  }
}

}  // namespace

Result<json> parse_json_text(const std::string& text, const std::string& file) {
  return parse_json_with(text, file, [&] { return json::parse(text); });
}

SourceLoc loc_from_offset(const std::string& text, size_t byte, const std::string& file) {
  SourceLoc loc;
  loc.file = file;
  const size_t at = std::min(byte == 0 ? 0 : byte - 1, text.size());
  loc.line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      line_start = i + 1;
    }
  }
  loc.col = static_cast<int>(at - line_start) + 1;
  return loc;
}

namespace {

// A dump's value tree (from JSON `text`, or from a pickle when `text` is null) as an
// FrDump; `staged` holds the entries already read from it one at a time (the tree's own
// are added there too), copied into the dump at their exact size.
Result<FrDump> read_fr_tree(const json& root, const std::string* text, const std::string& file, int fallback_rank,
                            std::vector<FrEntry>& staged) {
  if (!root.is_object()) {
    Diagnostic d = file_error(file, text ? "a flight-recorder dump must be a JSON object"
                                         : "a flight-recorder dump must be a dict, this pickle holds a " +
                                               std::string(root.is_array() ? "list or tuple" : "single value"));
    if (text) d.loc.line = d.loc.col = 1;
    return d;
  }
  FrDump dump;
  dump.file = file;
  DumpReader rd{text, file, std::nullopt, {}};
  if (!root.contains("rank") && fallback_rank < 0)
    return file_error(file, "no 'rank' key, and no rank number at the end of the file name: whose dump is it?");
  const int64_t rank = rd.field(root, "rank", fallback_rank, {});
  if (rank < 0 || rank > INT32_MAX) rd.fail({{"rank", 0}}, "a rank must be an integer in 0 .. 2^31-1, got " + std::to_string(rank));
  dump.rank = static_cast<int>(rank);
  dump.version = field_string(root, "version");
  dump.comm_lib_version = root.contains("comm_lib_version") ? field_string(root, "comm_lib_version")
                                                            : field_string(root, "nccl_version");
  read_groups(root, dump, rd);
  auto listed = root.find("entries");
  if (listed != root.end() && listed->is_array()) {
    for (size_t i = 0; i < listed->size(); ++i) {
      const json& e = (*listed)[i];
      if (!e.is_object()) continue;
      EntrySlots slots;
      EntrySlots::from_object(json(e), slots);
      staged.push_back(parse_entry(slots, rd, i));
    }
  }
  dump.entries.assign(staged.begin(), staged.end());  // held until the analysis ends: no growth slack per rank
  read_status(root, dump, rd);  // maps pg_status's pg ids to names by the entries
  if (rd.error) return *rd.error;
  return dump;
}

// The entries of the dump being read, on each reading thread: one vector grown once and
// reused from dump to dump, so a dump's entries cost one allocation of their own size and
// one copy (a fresh vector per dump, grown by doubling and then shrunk to size, took a
// dozen allocations and moved the entries twice more). A reader that met a dump far
// larger than the usual gives the room back.
class StagedEntries {
 public:
  StagedEntries() { t_entries.clear(); }
  ~StagedEntries() {
    if (t_entries.capacity() > kKeepEntries) std::vector<FrEntry>().swap(t_entries);
  }
  std::vector<FrEntry>& get() { return t_entries; }

 private:
  static constexpr size_t kKeepEntries = size_t{1} << 16;
  static thread_local std::vector<FrEntry> t_entries;
};
thread_local std::vector<FrEntry> StagedEntries::t_entries;

}  // namespace

Result<FrDump> parse_fr_dump(const std::string& text, const std::string& file, int fallback_rank) {
  if (looks_like_pickle(text)) {
    // Entries one at a time: the dump's largest part never sits in memory as a tree.
    StagedEntries staged;
    std::vector<FrEntry>& entries = staged.get();
    DumpReader rd{nullptr, file, std::nullopt, {}};
    Result<json> rest = read_pickle_entries(text, file, "entries", [&](size_t i, const EntrySlots& e) {
      entries.push_back(parse_entry(e, rd, i));
    });
    if (!rest) return rest.errors();
    if (rd.error) return *rd.error;
    return read_fr_tree(*rest, nullptr, file, fallback_rank, entries);
  }
  // The template reader first, then simdjson, else a SAX pass (dump_template.h,
  // dump_simd.h, dump_sax.h): each object of the top-level `entries` list is read into
  // an FrEntry from its slots, never built as a tree.
  StagedEntries staged;
  std::vector<FrEntry>& entries = staged.get();
  const auto filing_with = [&](DumpReader& r) {
    return [&entries, &r](size_t i, const EntrySlots& e) { entries.push_back(parse_entry(e, r, i)); };
  };
  const auto on_reset = [&] { entries.clear(); };
  for (const auto read : {read_dump_template, read_dump_simd}) {
    DumpReader fast_rd{&text, file, std::nullopt, {}};
    if (std::optional<json> root = read(text, filing_with(fast_rd), on_reset, kMaxJsonValues)) {
      if (fast_rd.error) return *fast_rd.error;
      return read_fr_tree(*root, &text, file, fallback_rank, entries);
    }
    entries.clear();  // the reader may have given up after some entries (dump_template.h, dump_simd.h): start afresh
  }
  DumpReader rd{&text, file, std::nullopt, {}};
  DumpSax sax(filing_with(rd), on_reset);
  Result<json> parsed = parse_json_with(text, file, [&] {
    json::sax_parse(text, &sax);
    return std::move(sax.root());
  });
  if (!parsed) return parsed.errors();
  if (rd.error) return *rd.error;
  return read_fr_tree(*parsed, &text, file, fallback_rank, entries);
}

}  // namespace fleetsim::diagnose
