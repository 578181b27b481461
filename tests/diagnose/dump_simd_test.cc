// The simdjson dump reader (dump_simd.h) against the SAX pass (dump_sax.h) it stands in
// for (and, where it takes a text, the template reader, dump_template.h, against both): the same entries' slots, numbered alike, and the same root tree, value types
// included, on every JSON fixture and on hand-made edge cases; and the files it must
// leave to the SAX pass (syntax errors, integers past 64 bits, "-0", a BOM) left to it,
// so their diagnostics stay the SAX pass's.
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/dump_simd.h"
#include "sim/diagnose/record.h"
#include "tests/support/files.h"
#include "tests/support/json_readers.h"
#include "tests/support/same_json.h"

namespace fleetsim::diagnose {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using test_support::expect_same;
using test_support::JsonReader;

// simdjson's read alone: whether it took `text` in `read`.
json read_with(const std::string& text, bool fast, bool* read = nullptr) {
  return test_support::read_with(text, fast ? JsonReader::kSimd : JsonReader::kSax, read);
}

TEST(DumpSimd, EveryJsonFixtureReadsAsTheSaxPassReadsIt) {
  int files = 0;
  for (const char* dir : {"fr", "real"}) {
    for (const auto& f : fs::recursive_directory_iterator(test_support::fixture_path(dir))) {
      if (f.path().extension() != ".json") continue;
      const std::string text = test_support::slurp(f.path());
      if (f.path().parent_path().filename() == "malformed") continue;  // below
      SCOPED_TRACE(f.path().string());
      expect_same(text);
      ++files;
    }
  }
  EXPECT_GT(files, 50);
}

TEST(DumpSimd, ValueTypesAsNlohmannMakesThem) {
  // Non-negative integers unsigned (those below 2^63 too), negative ones signed, floats
  // double (an integral float stays a float), up to the 64-bit bounds.
  expect_same(R"({"rank":0,"entries":[{"record_id":0,"pg_id":-1,"duration_ms":2.0,"time_created_ns":18446744073709551615,
    "timeout_ms":-9223372036854775808,"input_sizes":[[1,-2,3.5e-3,1E5,0.1]],"retired":true,"state":null}],
    "x":{"u":9223372036854775807,"v":9223372036854775808,"f":-0.0,"t":1e-400}})");
}

TEST(DumpSimd, RepeatedKeysKeepTheLastValue) {
  expect_same(R"({"entries":[{"record_id":1,"record_id":2,"state":"a","frames":[],"state":"b"}],
    "pg_config":{"0":{"ranks":[0]},"0":{"ranks":[1]}},"version":"1","version":"2.10"})");
  // A second `entries` list starts the entries again; a later non-list value is kept in
  // the tree and resets nothing.
  expect_same(R"({"entries":[{"record_id":1}],"entries":[{"record_id":2},3,[4],{"record_id":5}],"entries":7})");
  expect_same(R"({"entries":{"record_id":1},"nested":{"entries":[{"record_id":2}]}})");
}

TEST(DumpSimd, StringsEscapesAndNonAscii) {
  expect_same(R"({"entries":[{"profiling_name":"nccl:all_reduce \u00e9\u4e2d\ud83d\ude00 é中😀","frames":[
    {"name":"a\"b\\c\/d\b\f\n\r\t\u0000e","filename":"\u001f"}],"process_group":["0","dp"]}],"x":"ünï"})");
}

TEST(DumpSimd, OtherRootsAndEmptyLists) {
  expect_same(R"([{"entries":[{"record_id":1}]}])");
  expect_same(R"("text")");
  expect_same(R"({"entries":[],"pg_config":{},"pg_status":[]})");
  expect_same(" \n{\"entries\" : [ { } , { \"unknown\" : [1, {\"a\": 2}] } ]}\n ");
}

TEST(DumpSimd, FilesReadDifferentlyAreLeftToTheSaxPass) {
  // Past 64 bits nlohmann makes a float; "-0" is its signed 0; it skips a BOM.
  for (const std::string text : {R"({"entries":[{"record_id":18446744073709551616}]})",
                                 R"({"entries":[{"pg_id":-9223372036854775809}]})", R"({"entries":[{"pg_id":-0}]})",
                                 R"({"x":[-0]})", "\xEF\xBB\xBF{\"entries\":[]}"}) {
    SCOPED_TRACE(text);
    bool read = true;
    read_with(text, true, &read);
    EXPECT_FALSE(read);
    // and the file still parses, as the SAX pass reads it
    const Result<FrDump> d = parse_fr_dump(text, "rank_0.json", 0);
    if (!d.ok()) {
      EXPECT_EQ(d.errors().front().message.find("malformed JSON"), std::string::npos) << d.errors().front().to_string();
    }
  }
  // A string that looks like a "-0" value leaves the file to the SAX pass too, harmlessly;
  // PyTorch's point-to-point names ("nccl:recv 1<-0") and other numbers do not.
  bool read = true;
  read_with(R"({"version":"a, -0"})", true, &read);
  EXPECT_FALSE(read);
  read_with(R"({"x": [1,
    -0 ]})", true, &read);
  EXPECT_FALSE(read);
  expect_same(R"({"version":"2024-01-02","x":-0.5,"y":-0e1,"z":-0E-2,"w":[-0.0],"entries":[
    {"profiling_name":"nccl:recv 1<-0"},{"profiling_name":"nccl:send 0->1"}]})");
}

TEST(DumpSimd, MalformedFilesGiveTheSaxPassErrors) {
  // Each error word for word and place for place as the SAX pass alone gave it.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"entries":[{"record_id":1,}]})",
       "1:28: error: malformed JSON: syntax error while parsing object key - unexpected '}'; expected string literal"},
      {R"({"entries":[{"record_id":1}])",
       "1:29: error: malformed JSON: syntax error while parsing object - unexpected end of input; expected '}'"},
      {R"({"rank":0,"entries":[{"record_id":1e999}]})", "1:35: error: malformed JSON: number out of range: 1e999"},
      {"{\"rank\":0,\n \"entries\":[{\"state\":\"a\tb\"}]}",
       "2:24: error: malformed JSON: syntax error while parsing value - invalid string: control character U+0009 (HT) "
       "must be escaped to \\u0009 or \\t; last read: '\"a<U+0009>'"},
      {R"({"rank":0} x)",
       "1:12: error: malformed JSON: syntax error while parsing value - invalid literal; last read: '0} x'; expected "
       "end of input"},
      {R"({"rank":0,"version":"\ud800"})",
       "1:28: error: malformed JSON: syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must "
       "be followed by U+DC00..U+DFFF; last read: '\"\\ud800\"'"},
      {"{\"rank\":0,\"version\":\"\xff\"}",
       "1:22: error: malformed JSON: syntax error while parsing value - invalid string: ill-formed UTF-8 byte; last "
       "read: '\"\xff'"},
      {"", "1:1: error: malformed JSON: syntax error while parsing value - unexpected end of input; expected '[', '{', "
           "or a literal"},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    bool read = true;
    read_with(text, true, &read);
    EXPECT_FALSE(read);
    const Result<FrDump> d = parse_fr_dump(text, "rank_0.json", 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.errors().front().to_string(), "rank_0.json:" + error);
  }
}

TEST(DumpSimd, EntryKeysAreFoundByNameAndOnlyByName) {
  for (size_t k = 0; k < kEntryKeyCount; ++k) EXPECT_EQ(entry_key(kEntryKeyNames[k]), k) << kEntryKeyNames[k];
  // Keys PyTorch writes that nothing reads, near misses, and keys sharing a name's slot.
  for (const std::string_view other : {"op_id", "thread_id", "thread_name", "", "s", "state ", "State", "frame",
                                       "record_ic", "is_p2q", "timeout_ns", "input_size", "output_dtype"})
    EXPECT_EQ(entry_key(other), kEntryKeyCount) << other;
  EXPECT_EQ(entry_key(std::string_view("pg_id\0", 6)), kEntryKeyCount);
  // The word compare behind it, at each length around a word and a difference at each place.
  for (size_t n = 0; n < 27; ++n) {
    const std::string a(n, 'x');
    EXPECT_TRUE(same_text(a, std::string(n, 'x')));
    EXPECT_FALSE(same_text(a, a + "x"));
    for (size_t at = 0; at < n; ++at) {
      std::string b = a;
      b[at] = 'y';
      EXPECT_FALSE(same_text(a, b)) << n << " " << at;
    }
  }
}

TEST(DumpSimd, EqualStringsAreOneNodeUpToABound) {
  // Equal strings of a dump are one node (what the record reader keeps by node is found
  // again); past the bound on distinct strings, each string is a node of its own, and
  // every value reads the same either way.
  std::vector<uint32_t> state_nodes;
  const std::string text = R"({"entries":[{"state":"completed"},{"state":"completed","profiling_name":"completed"}]})";
  ASSERT_TRUE(read_dump_simd(text, [&](size_t, const EntrySlots& s) { state_nodes.push_back(s.node[kKeyState]); },
                             [] {}));
  ASSERT_EQ(state_nodes.size(), 2u);
  EXPECT_EQ(state_nodes[0], state_nodes[1]);
  std::string many = R"({"entries":[)";
  for (int i = 0; i < 40000; ++i)
    many += (i ? "," : "") + std::string(R"({"state":"s)") + std::to_string(i) + R"(","profiling_name":"p)" +
            std::to_string(i) + R"(","process_group":["s)" + std::to_string(i) + R"(","dp"]})";
  many += "]}";
  expect_same(many);
}

// A dump whose entries hold more values than the bound (a pickle's, 2^25, by default)
// is left to the SAX pass, which reads it from a fresh reader: the bound keeps the
// arena's nodes (56 bytes each) from growing with a list of millions of numbers. The
// template reader counts a value met again as the nodes it stands for, so it stops
// where simdjson's read does (or before), and leaves the file to it.
TEST(DumpSimd, ADumpPastTheValueBoundIsLeftToTheSaxPass) {
  const std::string text =
      R"({"version": "2.10", "entries": [{"record_id": 0, "input_sizes": [[1, 2]]},
          {"record_id": 1, "input_sizes": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]},
          {"record_id": 1, "input_sizes": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]}]})";
  for (const JsonReader reader : {JsonReader::kSimd, JsonReader::kTemplate}) {
    SCOPED_TRACE(reader == JsonReader::kSimd ? "simdjson" : "template");
    // Taken within 100; past 25 at the third entry (for the template reader, met again); past 3 in the first's list.
    EXPECT_EQ(test_support::read_within(text, reader, 100), std::make_pair(true, 3));
    EXPECT_EQ(test_support::read_within(text, reader, 25), std::make_pair(false, 2));
    EXPECT_EQ(test_support::read_within(text, reader, 3), std::make_pair(false, 0));
  }
  // parse_fr_dump (the default bound) reads it whole, as before.
  Result<FrDump> dump = parse_fr_dump(text, "rank_0.json", 0);
  ASSERT_TRUE(dump.ok()) << dump.errors().front().message;
  EXPECT_EQ(dump->entries.size(), 3u);
}

// An entry's shape slots are left as a print (DeferredShape) where they are lists,
// strings and numbers: equal values give equal prints, and values that dump to other
// JSON texts (4, 4.0, "4", -4, 2^64-1; [[4]] and [4]; null, [] and an absent slot)
// other prints. An object, or a print past its room, is made as nodes at once.
TEST(DumpSimd, ShapeSlotsArePrintedUnlessAnObjectOrLong) {
  const std::vector<std::string> sizes = {"[[4]]", "[[4.0]]", "[[\"4\"]]", "[[-4]]", "[[18446744073709551615]]",
                                          "[4]",   "null",    "[]",         "[[true]]", "[[4, 8]]"};
  std::string text = R"({"entries":[)";
  for (size_t i = 0; i < 2 * sizes.size(); ++i)
    text += (i ? "," : "") + std::string(R"({"record_id":)") + std::to_string(i) +
            R"(,"input_dtypes":["Float"],"input_sizes":)" + sizes[i % sizes.size()] + "}";
  text += R"(,{"record_id":90},{"input_sizes":[[4]],"input_dtypes":{"a":1}})";
  std::string long_list = "[[";
  for (int d = 0; d < 300; ++d) long_list += (d ? "," : "") + std::to_string(d);
  text += R"(,{"input_sizes":)" + long_list + "]]}]}";
  std::vector<std::vector<uint64_t>> prints;
  std::vector<bool> deferred;
  ASSERT_TRUE(read_dump_simd(
      text,
      [&](size_t, const EntrySlots& s) {
        deferred.push_back(s.deferred != nullptr);
        prints.emplace_back();
        if (s.deferred) prints.back().assign(s.deferred->print.begin(), s.deferred->print.end());
      },
      [] {}));
  const size_t n = sizes.size();
  ASSERT_EQ(prints.size(), 2 * n + 3);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(deferred[i] && deferred[n + i]) << sizes[i];
    EXPECT_EQ(prints[i], prints[n + i]) << sizes[i];  // the same values again: the same print
    for (size_t j = 0; j < i; ++j) EXPECT_NE(prints[i], prints[j]) << sizes[i] << " and " << sizes[j];
  }
  EXPECT_TRUE(deferred[2 * n]);  // no shape slot at all: a print of four absent slots
  EXPECT_NE(prints[2 * n], prints[0]);
  EXPECT_FALSE(deferred[2 * n + 1]);  // an object
  EXPECT_FALSE(deferred[2 * n + 2]);  // 300 dimensions: past the print's 256 words
  expect_same(text);                  // every slot, made, reads as the SAX pass reads it
}

// The record reader reads a printed shape's texts off nodes made for the first entry
// with that print: each entry's shape is its own values' JSON text, as nlohmann dumps
// them, and its element count, however the entries before it were shaped.
TEST(DumpSimd, PrintedShapesReadAsTheirOwnValues) {
  const std::vector<std::string> sizes = {"[[4]]", "[[4.0]]", "[[\"4\"]]", "[[-4]]",  "[4]", "null",
                                          "[[4, 8]]", "[[4],[8]]", "[[8, 4]]", "[[1e3]]", "[]"};
  const std::vector<int64_t> numel = {4, 0, 4, 0, 0, 0, 32, 12, 32, 0, 0};
  std::string text = R"({"version":"2.10","entries":[)";
  for (size_t i = 0; i < 3 * sizes.size(); ++i)
    text += (i ? "," : "") + std::string(R"({"pg_id":0,"collective_seq_id":)") + std::to_string(i) +
            R"(,"input_sizes":)" + sizes[(i * 7) % sizes.size()] + R"(,"output_dtypes":["BFloat16"]})";
  text += "]}";
  Result<FrDump> d = parse_fr_dump(text, "rank_0.json", 0);
  ASSERT_TRUE(d.ok()) << d.errors().front().message;
  ASSERT_EQ(d->entries.size(), 3 * sizes.size());
  for (size_t i = 0; i < d->entries.size(); ++i) {
    const size_t k = (i * 7) % sizes.size();
    SCOPED_TRACE(sizes[k]);
    EXPECT_EQ(d->entries[i].input_sizes().str(), json::parse(sizes[k]).dump());
    EXPECT_EQ(d->entries[i].input_numel(), numel[k]);
    EXPECT_EQ(d->entries[i].output_dtypes().str(), "[\"BFloat16\"]");
    EXPECT_EQ(d->entries[i].output_sizes().str(), "[]");
  }
}

}  // namespace
}  // namespace fleetsim::diagnose
