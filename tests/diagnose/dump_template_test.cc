// The template reader of JSON dumps (dump_template.h) against the SAX pass and
// simdjson's read: every text it takes reads as they read it (the same root, the same
// slots, value types included), it takes the dumps PyTorch and fleetsim write, and it
// leaves to simdjson's read what it does not read (escapes, non-ASCII, repeated keys,
// numbers past 64 bits, deep nesting, anything malformed).
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_template.h"
#include "sim/diagnose/record.h"
#include "tests/support/files.h"
#include "tests/support/json_readers.h"

namespace fleetsim::diagnose {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using test_support::expect_same;
using test_support::JsonReader;
using test_support::read_with;

bool takes(const std::string& text) {
  bool read = false;
  read_with(text, JsonReader::kTemplate, &read);
  return read;
}

// PyTorch's own dumps (tests/fixtures/real, written by torch's flight recorder) and
// fleetsim's (tests/fixtures/fr, written by the simulator, indented), whole.
TEST(DumpTemplate, TakesEveryWellFormedFixtureAndReadsItAsTheSaxPass) {
  int files = 0;
  for (const char* dir : {"fr", "real"}) {
    for (const auto& f : fs::recursive_directory_iterator(test_support::fixture_path(dir))) {
      if (f.path().extension() != ".json" || f.path().parent_path().filename() == "malformed") continue;
      SCOPED_TRACE(f.path().string());
      const std::string text = test_support::slurp(f.path());
      if (!json::parse(text).contains("entries")) continue;  // expected.json and the like
      expect_same(text, true);
      ++files;
    }
  }
  EXPECT_GT(files, 50);
}

TEST(DumpTemplate, EntriesOffTheTemplateReadAsTheSaxPass) {
  // Keys in another order, keys missing, keys added, whitespace that changes from
  // entry to entry, values that alternate or change type at a key, and a value whose
  // text begins as the last one's (12 and 123, true and a string "true").
  expect_same(R"({"version":"2.10","entries":[
    {"record_id":0,"state":"completed","collective_seq_id":12,"is_p2p":false,"input_sizes":[[4]]},
    {"record_id":1,"state":"completed","collective_seq_id":123,"is_p2p":false,"input_sizes":[[4]]},
    {"state":"scheduled","record_id":2,"collective_seq_id":124,"input_sizes":[[4, 8]]},
    {"state":"scheduled","record_id":3, "collective_seq_id" : 125 ,"input_sizes":[[4]],"retired":true},
    {"state":"completed","record_id":4,"collective_seq_id":1250,"input_sizes":[[4]],"retired":"true"},
    {"state":"scheduled","record_id":5,"collective_seq_id":1251,"input_sizes":[[4]],"retired":true},
    {"state":"scheduled","record_id":6,"collective_seq_id":1.5,"input_sizes":null,"retired":null},
    {},
    {"state":"scheduled"},
    {"state":"scheduled","unknown":{"a":[1,{"b":null}]},"frames":[{"name":"f","filename":"x.py","line":3}]},
    {"state":"scheduled","unknown":{"a":[1,{"b":null}]},"frames":[{"name":"f","filename":"x.py","line":3}]}
  ],"pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0, 1]"}}})",
              true);
}

TEST(DumpTemplate, NumbersAndLiteralsAsNlohmannTypesThem) {
  // Non-negative integers unsigned up to 2^64-1, negative ones signed down to -2^63,
  // fractions and exponents doubles, each as the SAX pass types it.
  expect_same(R"({"entries":[{"pg_id":-1,"duration_ms":2.0,"time_created_ns":18446744073709551615,
    "timeout_ms":-9223372036854775808,"input_sizes":[[1,-2,3.5e-3,1E5,0.1,123.456e7,-7.25,0,1e+2]],
    "retired":true,"is_p2p":false,"state":null,"collective_seq_id":9223372036854775807,
    "p2p_seq_id":9223372036854775808}]})",
              true);
}

TEST(DumpTemplate, TheRootsOtherKeysAreSimdjsonsWhateverTheyHold) {
  // Escapes, non-ASCII and "-0"-free numbers outside the entries: skipped here, read by simdjson.
  expect_same(R"({"version":"a\"b\\c \u00e9 é","pg_config":{"0":{"ranks":[0,1],"desc":"x]}"}},
    "entries":[{"record_id":1}],"pg_status":{"0":{"last_enqueued_collective":3}},"x":[1.5e3,"]",{"}":"["}]})",
              true);
}

TEST(DumpTemplate, LeavesToSimdjsonWhatItDoesNotRead) {
  for (const std::string text : {
           R"({"entries":[{"state":"a\"b"}]})",                        // an escape in an entry
           R"({"entries":[{"state":"é"}]})",                           // a byte past ASCII
           "{\"entries\":[{\"state\":\"a\x01\"}]}",                    // a control byte (malformed)
           R"({"entries":[{"record_id":1,"record_id":2}]})",           // a key the entry already holds
           R"({"entries":[{"record_id":1},[2]]})",                     // an item not an object
           R"({"entries":[{"record_id":1}],"entries":[]})",            // a second list
           R"({"entries":{"record_id":1}})",                           // not a list
           R"([{"entries":[]}])",                                      // a root not an object
           R"({"version":"1"})",                                       // no entries at all
           R"({"entries":[{"record_id":18446744073709551616}]})",      // past 64 bits
           R"({"entries":[{"pg_id":-9223372036854775809}]})",          // below -2^63
           R"({"entries":[{"pg_id":-0}]})",                            // nlohmann's signed 0
           R"({"entries":[{"duration_ms":1e999}]})",                   // past a double
           R"({"entries":[{"record_id":01}]})",                        // malformed numbers
           R"({"entries":[{"record_id":1.}]})",
           R"({"entries":[{"record_id":.5}]})",
           R"({"entries":[{"record_id":+1}]})",
           R"({"entries":[{"retired":tru}]})",                         // malformed literals
           R"({"entries":[{"retired":truex}]})",
           R"({"entries":[{"record_id":1,}]})",                        // trailing commas
           R"({"entries":[{"record_id":1},]})",
           R"({"entries":[{"record_id":1}]} x)",                       // past the root
           R"({"entries":[{"record_id":1}],"version":"1)",             // cut short
           R"({"entries":[{"record_id":1}],"version":[1})",            // the root's rest malformed
           "\xEF\xBB\xBF{\"entries\":[]}",                             // a BOM
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(takes(text));
  }
  std::string deep = R"({"entries":[{"frames":)";
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  deep += "}]}";
  EXPECT_FALSE(takes(deep));
  expect_same(deep);  // and simdjson reads it
}

TEST(DumpTemplate, AValueMetAgainAtItsPlaceIsItsNodeAgain) {
  // The record reader keeps what it read of a node (a string's symbol, a list's print):
  // a value met again at the same key is the same node, and a changed value a new one.
  std::vector<std::array<uint32_t, kEntryKeyCount>> nodes;
  const std::string text = R"({"entries":[{"state":"completed","process_group":["1","tp"],"record_id":7},
    {"state":"completed","process_group":["1","tp"],"record_id":8},
    {"state":"completed","process_group":["2","dp"],"record_id":8}]})";
  ASSERT_TRUE(read_dump_template(text, [&](size_t, const EntrySlots& s) { nodes.push_back(s.node); }, [] {}));
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0][kKeyState], nodes[1][kKeyState]);
  EXPECT_EQ(nodes[0][kKeyProcessGroup], nodes[1][kKeyProcessGroup]);
  EXPECT_NE(nodes[1][kKeyProcessGroup], nodes[2][kKeyProcessGroup]);
  EXPECT_NE(nodes[0][kKeyRecordId], nodes[1][kKeyRecordId]);
  EXPECT_EQ(nodes[1][kKeyRecordId], nodes[2][kKeyRecordId]);
  expect_same(text, true);
}

// A file the template reader gives up on after some entries is read afresh by the next
// reader: the record holds each entry once, and a record-level error (a negative
// sequence number) is the one the next reader finds.
TEST(DumpTemplate, AFileGivenUpHalfWayIsReadAfresh) {
  const std::string text = R"({"rank":0,"entries":[{"collective_seq_id":1,"pg_id":0},{"collective_seq_id":2,"pg_id":0},
    {"collective_seq_id":3,"pg_id":0,"state":"caf\u00e9"}]})";
  EXPECT_FALSE(takes(text));
  Result<FrDump> dump = parse_fr_dump(text, "rank_0.json", 0);
  ASSERT_TRUE(dump.ok()) << dump.errors().front().message;
  ASSERT_EQ(dump->entries.size(), 3u);
  EXPECT_EQ(dump->entries[2].collective_seq_id, 3);
  EXPECT_EQ(dump->entries[2].state().str(), "café");
  const std::string bad = R"({"rank":0,"entries":[{"collective_seq_id":-2},{"state":"é"}]})";
  Result<FrDump> refused = parse_fr_dump(bad, "rank_0.json", 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors().front().to_string(),
            "rank_0.json:1:43: error: entries[0].collective_seq_id: a sequence number must be >= 0, got -2");
}

}  // namespace
}  // namespace fleetsim::diagnose
