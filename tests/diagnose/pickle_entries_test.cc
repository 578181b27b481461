// Tests for the pickle reader's entry pass (sim/diagnose/pickle_reader.h:
// read_pickle_entries): an entry list's dicts read into slots in place give what the
// JSON tree would, the same located errors at the same bytes, and the same answers to
// every question the record reader asks of a slot (slot_value.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/pickle_reader.h"
#include "sim/diagnose/slot_value.h"
#include "tests/diagnose/pickle_bytes.h"

namespace fleetsim::diagnose {
namespace {

using nlohmann::json;
using namespace std::string_literals;
using namespace pickle_bytes;

// An entry list's items, as "index.key=value" for every key an entry is read by, then
// the rest of the dump (or the error): copied out as JSON trees (no walk is skipped
// where a tree is built) ...
std::vector<std::string> from_tree(const std::string& bytes, const PickleLimits& limits = {}) {
  std::vector<std::string> got;
  auto sink = [&](size_t i, json&& v) {
    if (!v.is_object()) return;
    EntrySlots slots;
    EntrySlots::from_object(std::move(v), slots);
    for (size_t k = 0; k < kEntryKeyCount; ++k)
      if (slots.present[k]) got.push_back(std::to_string(i) + "." + std::string(kEntryKeyNames[k]) + "=" + slots.value[k].dump());
  };
  Result<json> rest = read_pickle_streaming(bytes, "p.pkl", "entries", sink, limits);
  got.push_back(rest ? rest->dump() : "ERROR " + rest.errors().front().to_string());
  return got;
}

// ... or read into slots in place (a shared subtree walked whole is skipped after).
std::vector<std::string> from_slots(const std::string& bytes, const PickleLimits& limits = {}) {
  std::vector<std::string> got;
  auto sink = [&](size_t i, const EntrySlots& slots) {
    for (size_t k = 0; k < kEntryKeyCount; ++k)
      if (const SlotValue v = slots.find(static_cast<EntryKey>(k)))
        got.push_back(std::to_string(i) + "." + std::string(kEntryKeyNames[k]) + "=" + v.dump());
  };
  Result<json> rest = read_pickle_entries(bytes, "p.pkl", "entries", sink, limits);
  got.push_back(rest ? rest->dump() : "ERROR " + rest.errors().front().to_string());
  return got;
}

// An entry list read into slots: each dict's read keys hold what the tree would (the last
// of a repeated key), other items and keys are dropped, and an item past the bounds (even
// in a key nothing reads) is the same located error as when it is copied out whole.
TEST(PickleReader, EntriesFillTheSlotsTheTreeWould) {
  const std::string frame = "}q\x03(" + str("name", 4) + str("all_reduce", 5) + "u";
  const std::string entry = "}(" + str("state", 6) + str("scheduled", 7) + str("frames", 8) + "](" + frame + "h\x03" "e" +
                            str("thread_name", 9) + "](K\x01]K\x02" "ae" + "h\x06" + str("completed", 10) +
                            "K\x07K\x08" + str("input_sizes", 11) + "](]M\x01\x10" "ae" + "u";
  const std::string again = "}(h\x08](h\x03h\x03" "eu";  // the same frames, shared
  const std::string dump = pk("}(" + str("version", 0) + str("2.10", 1) + str("entries", 2) + "](K\x01" + entry + again + "e" + "u");
  const std::vector<std::string> want{"1.state=\"completed\"", "1.input_sizes=[[4097]]",
                                      "1.frames=[{\"name\":\"all_reduce\"},{\"name\":\"all_reduce\"}]",
                                      "2.frames=[{\"name\":\"all_reduce\"},{\"name\":\"all_reduce\"}]",
                                      "{\"version\":\"2.10\"}"};
  std::vector<std::string> got = from_slots(dump);
  std::vector<std::string> tree = from_tree(dump);
  std::sort(got.begin(), got.end());
  std::sort(tree.begin(), tree.end());
  std::vector<std::string> sorted_want = want;
  std::sort(sorted_want.begin(), sorted_want.end());
  EXPECT_EQ(got, sorted_want);
  EXPECT_EQ(tree, sorted_want);
  // A list holding itself under a key nothing reads, and a dict keyed by a list.
  const std::string cyclic = pk("}(" + str("entries", 0) + "](}(" + str("op_id", 1) + "]q\x02h\x02" "a" + "ue" + "u");
  const std::string bad_key = pk("}(" + str("entries", 0) + "](}(" + str("op_id", 1) + "}(]K\x01uue" + "u");
  for (const std::string& bytes : {cyclic, bad_key}) {
    EXPECT_EQ(from_slots(bytes), from_tree(bytes));
    EXPECT_EQ(from_slots(bytes).back().rfind("ERROR p.pkl: error: byte ", 0), 0u) << from_slots(bytes).back();
  }
}

// The walk spends a shared subtree it has walked whole at once and skips it, but only
// where it would pass: a budget spent past its limit inside a shared subtree on its
// third visit, and a depth bound passed only where a shared subtree sits deeper, are
// the same located errors as when every node is copied out, after the same entries.
TEST(PickleReader, SharedSubtreesFailWhereTheyWouldWhenWalkedAgain) {
  const std::string text(60000, 'x');
  const std::string s = "X" + u32(static_cast<uint32_t>(text.size())) + text;
  std::string shared = "]q\x03(" + s + "q\x04";  // [s] * 100: 16 + 100 * 60016 budget units a visit
  for (int i = 1; i < 100; ++i) shared += "h\x04";
  shared += "e";
  auto entry = [&](const std::string& payload) { return "}(" + str("state", 1) + "K\x01" + str("payload", 2) + payload + "u"; };
  const std::string budget_dump =
      pk("}(" + str("entries", 0) + "](" + entry(shared) + "}(h\x01K\x02h\x02h\x03u" + "}(h\x01K\x03h\x02h\x03u" + "e" + "u");
  PickleLimits one;
  one.expand_factor = 1;  // a budget of the file's size plus 16 MiB: passed on the third visit
  const std::vector<std::string> budget_got = from_slots(budget_dump, one);
  EXPECT_EQ(budget_got, from_tree(budget_dump, one));
  EXPECT_EQ(budget_got, (std::vector<std::string>{
                            "0.state=1", "1.state=2",
                            "ERROR p.pkl: error: byte " + std::to_string(budget_dump.find(s)) +
                                ": the values shared through the memo expand past 1 times the file's size: refused as too "
                                "large"}));
  EXPECT_EQ(from_slots(budget_dump), from_tree(budget_dump));  // within the usual budget: read whole
  EXPECT_EQ(from_slots(budget_dump).back(), "{}");

  // [[[1]]], three lists high, shared; no MARKs, so only the walk bounds the depth.
  const std::string tall = "]]]K\x01" "aaaq\x05";
  auto keyed = [&](const std::string& payload) { return "}" + str("frames", 1) + payload + "s"; };
  const std::string fits = keyed(tall) + "a" + keyed("]]h\x05" "aa") + "a";  // at depth 1, then 3: 6 lists deep
  const std::string deeper = keyed("]]]h\x05" "aaa") + "a";                  // at depth 4: 7 lists deep
  PickleLimits six;
  six.max_depth = 6;
  const std::string ok_dump = pk("}" + str("entries", 0) + "]" + fits + "s");
  EXPECT_EQ(from_slots(ok_dump, six), from_tree(ok_dump, six));
  EXPECT_EQ(from_slots(ok_dump, six).back(), "{}");
  const std::string deep_dump = pk("}" + str("entries", 0) + "]" + fits + deeper + "s");
  const std::vector<std::string> deep_got = from_slots(deep_dump, six);
  EXPECT_EQ(deep_got, from_tree(deep_dump, six));
  ASSERT_EQ(deep_got.size(), 3u);
  EXPECT_EQ(deep_got.back(), "ERROR p.pkl: error: byte " + std::to_string(deep_dump.find(tall) + 2) +
                                 ": containers nested deeper than 6: refused");
}

// An entry's own nodes are walked once, by recursion, while its slots are filed; what that
// walk does not take (a key that is not a string, lists nested past its own depth of 8)
// or an error inside an entry sends it to the full walk, which reads the same slots and
// finds the same first error at the same byte as when every node is copied out.
TEST(PickleReader, EntriesTheOneVisitWalkHandsOnReadAsTheTree) {
  std::string nested = "K\x07";  // [[[...[7]...]]], ten lists
  for (int i = 0; i < 10; ++i) nested = "]" + nested + "a";
  const std::string entries = "}(" + str("state", 1) + str("ok", 2) + "K\x05" + "K\x06" + "u" +  // an int key
                              "}(" + str("state", 3) + "h\x02" + str("frames", 4) + nested + "u" +
                              "}(h\x03h\x02" + str("input_sizes", 5) + "}(K\x01](K\x02K\x03" "eu" + "u";
  const std::string dump = pk("}(" + str("entries", 0) + "](" + entries + "e" + "u");
  const std::vector<std::string> got = from_slots(dump);
  EXPECT_EQ(got, from_tree(dump));
  EXPECT_EQ(got, (std::vector<std::string>{"0.state=\"ok\"", "1.state=\"ok\"", "1.frames=[[[[[[[[[[7]]]]]]]]]]",
                                           "2.input_sizes={\"1\":[2,3]}", "2.state=\"ok\"", "{}"}));
  // The depth bound, the budget and a cycle, passed inside one entry's own lists.
  PickleLimits shallow;
  shallow.max_depth = 6;
  const std::string cyclic = pk("}(" + str("entries", 0) + "](}(" + str("frames", 1) + "]](K\x01" "eq\x02h\x02" "a" "aue" + "u");
  PickleLimits tight;
  tight.expand_factor = 0;  // 16 MiB of budget: a 17 MB string in an entry passes it
  const std::string big(17u << 20, 'y');
  const std::string heavy = pk("}(" + str("entries", 0) + "](}(" + str("frames", 1) + "](K\x01X" +
                               u32(static_cast<uint32_t>(big.size())) + big + "eue" + "u");
  for (const auto& [bytes, limits] : std::vector<std::pair<std::string, PickleLimits>>{
           {dump, shallow}, {cyclic, PickleLimits{}}, {heavy, tight}}) {
    const std::vector<std::string> failed = from_slots(bytes, limits);
    EXPECT_EQ(failed, from_tree(bytes, limits));
    EXPECT_EQ(failed.back().rfind("ERROR p.pkl: error: byte ", 0), 0u) << failed.back();
  }
}

// Every question the record reader asks of a slot (slot_value.h) gets the same answer
// from the pickle's node, read in place, as from the JSON tree the node becomes: past
// int64, floats, negatives, None, tuples, nested lists, a dict with a repeated key.
void expect_same_value(const SlotValue& node, const SlotValue& tree, const std::string& at) {
  ASSERT_EQ(node.present(), tree.present()) << at;
  if (!tree.present()) return;
  EXPECT_EQ(node.dump(), tree.dump()) << at;
  EXPECT_EQ(node.is_null(), tree.is_null()) << at;
  EXPECT_EQ(node.is_boolean(), tree.is_boolean()) << at;
  EXPECT_EQ(node.is_number(), tree.is_number()) << at;
  EXPECT_EQ(node.is_number_integer(), tree.is_number_integer()) << at;
  EXPECT_EQ(node.is_number_unsigned(), tree.is_number_unsigned()) << at;
  EXPECT_EQ(node.is_number_float(), tree.is_number_float()) << at;
  EXPECT_EQ(node.is_string(), tree.is_string()) << at;
  EXPECT_EQ(node.is_array(), tree.is_array()) << at;
  EXPECT_EQ(node.is_object(), tree.is_object()) << at;
  if (tree.is_boolean()) {
    EXPECT_EQ(node.get_bool(), tree.get_bool()) << at;
  }
  if (tree.is_number_integer()) {
    EXPECT_EQ(node.get_int(), tree.get_int()) << at;
  }
  if (tree.is_number_unsigned()) {
    EXPECT_EQ(node.get_uint(), tree.get_uint()) << at;
  }
  if (tree.is_number()) {
    EXPECT_EQ(node.get_double(), tree.get_double()) << at;
  }
  if (tree.is_string()) {
    EXPECT_EQ(node.get_string(), tree.get_string()) << at;
  }
  if (tree.is_array()) {
    ASSERT_EQ(node.size(), tree.size()) << at;
    for (size_t i = 0; i < tree.size(); ++i) expect_same_value(node.item(i), tree.item(i), at + "[" + std::to_string(i) + "]");
  }
  if (tree.is_object())
    for (const char* key : {"name", "line", "missing"}) expect_same_value(node.find(key), tree.find(key), at + "." + key);
}

TEST(PickleReader, SlotsReadInPlaceAnswerAsTheTreeWould) {
  const std::string frame = "}(" + str("name", 20) + str("first", 21) + "h\x14" + str("second", 22) + str("line", 23) +
                            "K\x07" "u";
  const std::string entry = "}(" + str("record_id", 1) + "\x8a\x09" + std::string("\0\0\0\0\0\0\0\x80\0", 9) +
                            str("pg_id", 2) + "G" + std::string("\x40\0\0\0\0\0\0\0", 8) +
                            str("process_group", 3) + str("0", 4) + "N\x86" + str("is_p2p", 5) + "\x88" +
                            str("time_created_ns", 6) + "J\xfb\xff\xff\xff" + str("input_sizes", 7) +
                            "](](M\x01\x10K\x02" "ee" + str("frames", 8) + "](" + frame + str("plain", 24) + "K\x05" "e" +
                            str("state", 9) + str("completed", 10) + "u";
  const std::string dump = pk("}(" + str("entries", 0) + "](" + entry + "e" + "u");
  std::vector<json> trees;
  Result<json> whole = read_pickle_streaming(dump, "p.pkl", "entries", [&](size_t, json&& v) { trees.push_back(std::move(v)); });
  ASSERT_TRUE(whole.ok()) << whole.errors().front().to_string();
  ASSERT_EQ(trees.size(), 1u);
  EntrySlots from_tree;
  EntrySlots::from_object(json(trees[0]), from_tree);
  size_t read = 0;
  Result<json> rest = read_pickle_entries(dump, "p.pkl", "entries", [&](size_t, const EntrySlots& slots) {
    ++read;
    EXPECT_NE(slots.arena, nullptr);
    for (size_t k = 0; k < kEntryKeyCount; ++k) {
      EXPECT_TRUE(slots.value[k].is_null()) << "a pickle's slot is built as JSON: " << kEntryKeyNames[k];
      const auto key = static_cast<EntryKey>(k);
      expect_same_value(slots.find(key), from_tree.find(key), std::string(kEntryKeyNames[k]));
    }
  });
  ASSERT_TRUE(rest.ok()) << rest.errors().front().to_string();
  EXPECT_EQ(read, 1u);
  EXPECT_EQ(from_tree.find(kKeyRecordId).dump(), "9223372036854775808");
  EXPECT_EQ(from_tree.find(kKeyFrames).dump(), "[{\"line\":7,\"name\":\"second\"},\"plain\",5]");
}

}  // namespace
}  // namespace fleetsim::diagnose
