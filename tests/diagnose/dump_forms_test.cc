// Tests for the forms of flight-recorder dumps diagnose reads (docs/flight-recorder-
// formats.md): genuine torch-written pickles against the same job's JSON, the JSON
// schema versions 2.3 to 2.10, dumps found by name and by content in a folder and its
// host subfolders, and the CLI end to end on a folder of genuine pickles.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/diagnose/record.h"
#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

using test_support::slurp;

std::string fixture(const std::string& name) {
  return test_support::fixture_path("pickle/" + name);
}

FrDump parse_ok(const std::string& bytes, const std::string& file, int fallback_rank) {
  Result<FrDump> d = parse_fr_dump(bytes, file, fallback_rank);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().to_string());
  return d.ok() ? *d : FrDump{};
}

// A genuine torch pickle (torch_gloo/, make_pickles.py) reads as the same job's JSON
// dump does, entry by entry; only the pickle has frames (stack traces on).
TEST(DumpForms, TorchPickleReadsAsItsJsonTwin) {
  for (int rank = 0; rank < 2; ++rank) {
    const std::string name = "comm_lib_trace_rank_" + std::to_string(rank);
    const FrDump p = parse_ok(slurp(fixture("torch_gloo/" + name)), name, rank);
    const FrDump j = parse_ok(slurp(fixture("torch_gloo_json/" + name + ".json")), name + ".json", rank);
    EXPECT_EQ(p.rank, rank);
    EXPECT_EQ(p.version, "2.10");
    EXPECT_EQ(p.version, j.version);
    EXPECT_EQ(p.comm_lib_version, j.comm_lib_version);
    ASSERT_EQ(p.entries.size(), 5u);
    ASSERT_EQ(p.entries.size(), j.entries.size());
    for (size_t i = 0; i < p.entries.size(); ++i) {
      const FrEntry &a = p.entries[i], &b = j.entries[i];
      EXPECT_EQ(a.pg_id(), b.pg_id());
      EXPECT_EQ(a.pg_name(), b.pg_name());
      EXPECT_EQ(a.pg_desc(), b.pg_desc());
      EXPECT_EQ(a.collective_seq_id, b.collective_seq_id);
      EXPECT_EQ(a.profiling_name(), b.profiling_name());
      EXPECT_EQ(a.time_created_ns, b.time_created_ns);
      EXPECT_EQ(a.time_discovered_started_ns, 0);  // None in the pickle, 0 in JSON
      EXPECT_EQ(b.time_discovered_started_ns, 0);
      EXPECT_EQ(a.input_sizes(), b.input_sizes());
      EXPECT_EQ(a.output_sizes(), b.output_sizes());
      EXPECT_EQ(a.input_dtypes(), b.input_dtypes());
      EXPECT_EQ(a.state(), b.state());
      EXPECT_EQ(a.retired, b.retired);
      EXPECT_EQ(a.timeout_ms(), b.timeout_ms());
      EXPECT_FALSE(a.op_name().empty());  // frames[0].name, e.g. "all_reduce"
      EXPECT_TRUE(b.op_name().empty());   // JSON dumps carry no frames
    }
    EXPECT_EQ(p.entries[0].profiling_name(), "gloo:all_reduce");
    EXPECT_EQ(p.entries[0].op_name(), "all_reduce");
    ASSERT_EQ(p.status.size(), 1u);  // ints in the pickle, strings in JSON
    EXPECT_EQ(p.status.begin()->second.last_completed, j.status.begin()->second.last_completed);
    EXPECT_EQ(p.status.begin()->second.last_started, -1);
    ASSERT_EQ(p.groups.size(), j.groups.size());
    EXPECT_EQ(p.groups.begin()->second.ranks, (std::vector<int>{0, 1}));
  }
}

// What changed between schema versions, each read: 2.3 (the oldest), 2.4 (all_to_all
// sizes), 2.7 (nccl_version), 2.10 (comm_lib_version, thread_name/thread_id), frames
// only with stack traces, pg_status as strings, no entries, unknown times as 0.
TEST(DumpForms, JsonSchemaVersionsTwoThreeToTwoTen) {
  const std::string entry_23 =
      R"({"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 1,
          "p2p_seq_id": 0, "op_id": 1, "profiling_name": "nccl:all_reduce", "time_created_ns": 5,
          "input_sizes": [[4]], "output_sizes": [[4]], "state": "scheduled",
          "time_discovered_started_ns": null, "time_discovered_completed_ns": null, "retired": false,
          "timeout_ms": 600000, "is_p2p": false})";
  const FrDump v23 = parse_ok(R"({"version": "2.3", "pg_config": {"0": {"name": "0", "desc": "default_pg",
      "ranks": [0, 1]}}, "pg_status": {"0": {"last_enqueued_collective": 1, "last_started_collective": -1,
      "last_completed_collective": 0}}, "entries": [)" + entry_23 + "]}", "nccl_trace_rank_1", 1);
  EXPECT_EQ(v23.version, "2.3");
  EXPECT_EQ(v23.comm_lib_version, "");
  ASSERT_EQ(v23.entries.size(), 1u);
  EXPECT_EQ(v23.entries[0].input_dtypes(), "[]");  // no dtypes before 2.4's sizes and dtypes
  EXPECT_EQ(v23.status.at("0").last_enqueued, 1);

  const FrDump v24 = parse_ok(R"({"version": "2.4", "entries": [{"pg_id": 0, "process_group": ["0", "default_pg"],
      "collective_seq_id": 2, "profiling_name": "nccl:all_to_all", "input_sizes": [[2], [3]],
      "output_sizes": [[3], [2]], "input_dtypes": ["Float", "Float"], "output_dtypes": ["Float", "Float"],
      "state": "scheduled"}]})", "rank_0.json", 0);
  ASSERT_EQ(v24.entries.size(), 1u);
  EXPECT_EQ(v24.entries[0].input_numel(), 5);
  EXPECT_EQ(v24.entries[0].output_sizes(), "[[3],[2]]");

  const FrDump v27 = parse_ok(R"({"version": "2.7", "nccl_version": "2.21.5", "pg_config": {},
      "pg_status": {"0": {"last_enqueued_collective": "3", "last_started_collective": "-1",
      "last_completed_collective": "2"}}})", "rank_0.json", 0);
  EXPECT_EQ(v27.comm_lib_version, "2.21.5");
  EXPECT_TRUE(v27.entries.empty());  // `entries` absent: none
  EXPECT_EQ(v27.status.at("0").last_completed, 2);  // strings, as JSON dumps write pg_status

  std::string entry_210 = entry_23;
  entry_210.insert(1, R"("frames": [{"name": "loss", "filename": "train.py", "line": 7}], "thread_name": "python",
      "thread_id": "1401", )");
  const FrDump v210 = parse_ok(R"({"version": "2.10", "comm_lib_version": "2.30.7", "entries": [)" + entry_210 +
                                   R"(, )" + entry_23 + "]}", "comm_lib_trace_rank_0", 0);
  EXPECT_EQ(v210.comm_lib_version, "2.30.7");
  ASSERT_EQ(v210.entries.size(), 2u);
  EXPECT_EQ(v210.entries[0].op_name(), "loss");  // frames only with stack traces
  EXPECT_EQ(v210.entries[1].op_name(), "");
  EXPECT_EQ(v210.entries[0].collective_seq_id, v23.entries[0].collective_seq_id);
  EXPECT_EQ(v210.entries[0].time_discovered_completed_ns, 0);  // null and 0 alike
}

// JSON entries are read as they are parsed: a repeated `entries` key still means its
// last list, and an entry's error is still located at its line and column.
TEST(DumpForms, JsonEntriesReadAsParsed) {
  const FrDump d = parse_ok(R"({"entries": [{"collective_seq_id": 1}], "rank": 0,
      "entries": [{"collective_seq_id": 2}, 7, {"collective_seq_id": 3}]})", "rank_0.json", 0);
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[0].collective_seq_id, 2);
  EXPECT_EQ(d.entries[1].collective_seq_id, 3);
  Result<FrDump> bad = parse_fr_dump("{\"entries\": [{},\n {\"p2p_seq_id\": \"x\"}]}", "rank_0.json", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().to_string(),
            "rank_0.json:2:17: error: entries[1].p2p_seq_id: expected an integer, got \"x\"");
}

// A reading thread stages each dump's entries in one vector it keeps from dump to dump:
// a dump read after a larger one, or after one that failed part way, holds its own
// entries only, at their exact size; so does a pickle read after JSON.
TEST(DumpForms, EachDumpHoldsOnlyItsOwnEntries) {
  const FrDump three = parse_ok(R"({"rank": 0, "entries": [{"collective_seq_id": 1}, {"collective_seq_id": 2},
      {"collective_seq_id": 3}]})", "rank_0.json", 0);
  ASSERT_EQ(three.entries.size(), 3u);
  EXPECT_EQ(three.entries.capacity(), 3u);
  const FrDump one = parse_ok(R"({"rank": 1, "entries": [{"collective_seq_id": 9}]})", "rank_1.json", 1);
  ASSERT_EQ(one.entries.size(), 1u);
  EXPECT_EQ(one.entries[0].collective_seq_id, 9);
  EXPECT_FALSE(parse_fr_dump(R"({"entries": [{"collective_seq_id": 4}, {"collective_seq_id": -2}]})", "rank_2.json", 2)
                   .ok());
  const FrDump after_error = parse_ok(R"({"rank": 3, "entries": [{"collective_seq_id": 5}]})", "rank_3.json", 3);
  ASSERT_EQ(after_error.entries.size(), 1u);
  EXPECT_EQ(after_error.entries[0].collective_seq_id, 5);
  const std::string name = "comm_lib_trace_rank_0";
  const FrDump pickle = parse_ok(slurp(fixture("torch_gloo/" + name)), name, 0);
  EXPECT_EQ(pickle.entries.size(), 5u);
  EXPECT_EQ(three.entries[2].collective_seq_id, 3);  // the first dump's entries are its own copy
}

// pg_config's rank lists as PyTorch writes them, a JSON list inside a string, read straight
// off the text; any other form is read (or refused) by the JSON path as before.
TEST(DumpForms, GroupRankStringsReadAsTheirJson) {
  const auto ranks_of = [](const std::string& escaped) -> Result<FrDump> {
    return parse_fr_dump(R"({"rank": 0, "pg_config": {"0": {"name": "0", "desc": "d", "ranks": )" + escaped +
                             R"(}}, "entries": [{"collective_seq_id": 1, "pg_id": 0}]})",
                         "rank_0.json", 0);
  };
  const std::vector<std::pair<std::string, std::vector<int>>> read = {
      {R"("[0, 1, 2]")", {0, 1, 2}},
      {R"("[2,0,1]")", {0, 1, 2}},                       // sorted
      {R"(" [ 3 ,\t4\n] ")", {3, 4}},                     // JSON white space anywhere
      {R"("[]")", {}},
      {R"("[2147483647]")", {2147483647}},
      {R"("[01]")", {}},                                  // not JSON: left a string, no list
      {R"("[1, 2")", {}},
      {R"("[1, 2] x")", {}},
      {R"("[1.0, 2]")", {1, 2}},                          // a JSON number the integer rules take
      {R"([5, 4])", {4, 5}},                              // a list, not a string
  };
  // Twice: a text read before is found by its bytes, and read the same.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [text, want] : read) {
      Result<FrDump> d = ranks_of(text);
      ASSERT_TRUE(d.ok()) << text << ": " << d.errors().front().to_string();
      EXPECT_EQ(d->groups.at("0").ranks.get(), want) << text;
    }
    for (const char* text : {R"("[2147483648]")", R"("[-1]")"}) {
      Result<FrDump> d = ranks_of(text);
      ASSERT_FALSE(d.ok()) << text;
      EXPECT_NE(d.errors().front().to_string().find("a rank must be an integer in 0 .. 2^31-1"), std::string::npos)
          << d.errors().front().to_string();
    }
  }
  // More distinct lists than are kept, then the first again; texts of one length that
  // differ in one byte.
  for (int k = 0; k < 40; ++k) {
    const int r = k % 20;
    Result<FrDump> d = ranks_of("\"[" + std::to_string(r) + ", " + std::to_string(r + 100) + "]\"");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->groups.at("0").ranks.get(), (std::vector<int>{r, r + 100})) << k;
  }
}

// The dump's own `rank` key wins over its file name; without one the name's trailing
// number is the rank; with neither the dump is refused.
TEST(DumpForms, RankFromTheDumpThenTheName) {
  EXPECT_EQ(parse_ok(R"({"rank": 5, "version": "2.10"})", "rank_3.json", 3).rank, 5);
  EXPECT_EQ(parse_ok(R"({"version": "2.10"})", "rank_3.json", 3).rank, 3);
  const std::string pickle = "\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x04\x00\x00\x00" "2.10q\x02u."s;
  EXPECT_EQ(parse_ok(pickle, "nccl_trace_rank_host7_12", 12).rank, 12);
  Result<FrDump> none = parse_fr_dump(pickle, "flight.bin", -1);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors().front().to_string(),
            "flight.bin: error: no 'rank' key, and no rank number at the end of the file name: whose dump is it?");
  Result<FrDump> list = parse_fr_dump("\x80\x02](e."s, "rank_0", 0);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.errors().front().to_string(),
            "rank_0: error: a flight-recorder dump must be a dict, this pickle holds a list or tuple");
}

// A value of the wrong type in a pickle names its path, at the file.
TEST(DumpForms, PickleValueOfTheWrongTypeNamesItsPath) {
  const std::string bad = "\x80\x02}(X\x07\x00\x00\x00" "entries](}(X\x11\x00\x00\x00" "collective_seq_id"
                          "X\x03\x00\x00\x00oneueu."s;
  Result<FrDump> d = parse_fr_dump(bad, "rank_2", 2);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.errors().front().to_string(), "rank_2: error: entries[0].collective_seq_id: expected an integer, got \"one\"");
}

TEST(DumpForms, RankFromFileNames) {
  EXPECT_EQ(rank_from_file_name("nccl_trace_rank_3"), 3);
  EXPECT_EQ(rank_from_file_name("comm_lib_trace_rank_12"), 12);
  EXPECT_EQ(rank_from_file_name("nccl_trace_rank_node17_5"), 5);
  EXPECT_EQ(rank_from_file_name("_dump_4"), 4);
  EXPECT_EQ(rank_from_file_name("trace_9.pkl"), 9);
  EXPECT_EQ(rank_from_file_name("fr7.pickle"), 7);
  EXPECT_TRUE(dump_like_name("_dump_4"));
  EXPECT_TRUE(dump_like_name("trace_5"));
  EXPECT_TRUE(dump_like_name("host3.json"));
  EXPECT_TRUE(dump_like_name("shard8.pkl"));
  EXPECT_FALSE(dump_like_name("data_2.csv"));
  EXPECT_FALSE(dump_like_name("trace.json"));
  EXPECT_FALSE(dump_like_name("rank_x.json"));
}

class DumpFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fleetsim_dump_forms_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& bytes) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << bytes;
  }
  std::string error_of(const Result<Record>& r) { return r.ok() ? "" : r.errors().front().to_string(); }
  fs::path dir_;
};

constexpr const char* kDumpJson = R"({"version": "2.10", "pg_config": {}, "pg_status": {}})";
const std::string kDumpPickle = "\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x04\x00\x00\x00" "2.10q\x02u."s;

// Every name form in the wild, files found by content alone, a folder per host, and
// files that are no dumps passed over.
TEST_F(DumpFolder, FindsDumpsByNameAndContentAndHostFolder) {
  write("nccl_trace_rank_host1_3", kDumpJson);
  write("_dump_4", kDumpPickle);
  write("trace_5", kDumpJson);
  write("rank_6", kDumpPickle);
  write("foo7.json", kDumpJson);
  write("bar8.pkl", kDumpPickle);
  write("flight", R"({"rank": 9, "version": "2.10", "pg_config": {}})");  // by content, rank from the dump
  write("host-a/comm_lib_trace_rank_10", kDumpPickle);
  write("host-b/nccl_trace_rank_11", kDumpPickle);
  write("host-b/deeper/nccl_trace_rank_12", kDumpPickle);  // two levels down: not read
  write("notes.txt", "rank 13 was slow\n");
  write("data_2.csv", "a,b\n1,2\n");
  write("config.json", R"({"lr": 0.1})");
  Result<Record> rec = read_record(dir_.string());
  ASSERT_TRUE(rec.ok()) << error_of(rec);
  std::vector<int> ranks;
  for (const auto& [r, d] : rec->dumps) ranks.push_back(r);
  EXPECT_EQ(ranks, (std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST_F(DumpFolder, TwoFilesForOneRankNameBoth) {
  write("host-a/nccl_trace_rank_1", kDumpPickle);
  write("host-b/rank_1.json", kDumpJson);
  const std::string err = error_of(read_record(dir_.string()));
  EXPECT_NE(err.find("host-b/rank_1.json: error: a second dump for rank 1 (also "), std::string::npos) << err;
  EXPECT_NE(err.find("host-a/nccl_trace_rank_1)"), std::string::npos) << err;
}

TEST_F(DumpFolder, APickleFoundByContentNeedsARank) {
  write("flight", kDumpPickle);
  EXPECT_EQ(error_of(read_record(dir_.string())),
            (dir_ / "flight").string() +
                ": error: no 'rank' key, and no rank number at the end of the file name: whose dump is it?");
}

TEST_F(DumpFolder, NothingFoundListsTheFormsLookedFor) {
  write("notes.txt", "nothing here\n");
  const std::string err = error_of(read_record(dir_.string()));
  EXPECT_NE(err.find("nothing to diagnose: no summary.json"), std::string::npos) << err;
  EXPECT_NE(err.find("by content, or named like nccl_trace_rank_<r>, comm_lib_trace_rank_<r>"), std::string::npos);
}

// End to end: `fleetsim diagnose` on the genuine pickles, and on a hostile one.
TEST(DumpForms, CliReadsGenuinePicklesAndRefusesHostileOnes) {
  using fleetsim::test_support::run_command;
  const auto ok = run_command(std::string(FLEETSIM_BINARY) + " diagnose " + fixture("torch_gloo"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("   - 2 dumps, "), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("every group agrees at every sequence number"), std::string::npos) << ok.out;
  const auto bad = run_command(std::string(FLEETSIM_BINARY) + " diagnose " + fixture("hostile/global"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, fixture("hostile/global/nccl_trace_rank_0") +
                         ": error: byte 2: opcode GLOBAL (0x63) is refused: it names or builds a Python object, which "
                         "would run code when loaded; a flight-recorder dump holds only dicts, lists, strings and "
                         "numbers\n");
}

// Entries' shapes are looked up by value, not dumped per entry: values that compare
// equal as numbers but print differently (4 and 4.0), a null and an absent slot, and
// repeats of one shape each keep their own text and element count.
TEST(DumpForms, ShapeTextsFollowEachEntrysOwnValues) {
  const FrDump d = parse_ok(R"({"version": "2.10", "entries": [
      {"pg_id": 0, "collective_seq_id": 1, "input_sizes": [[4]], "output_sizes": [[4]], "input_dtypes": ["Float"]},
      {"pg_id": 0, "collective_seq_id": 2, "input_sizes": [[4.0]], "output_sizes": [[4]], "input_dtypes": ["Float"]},
      {"pg_id": 0, "collective_seq_id": 3, "input_sizes": [[4]], "output_sizes": null},
      {"pg_id": 0, "collective_seq_id": 4, "input_sizes": [[4]]},
      {"pg_id": 0, "collective_seq_id": 5, "input_sizes": [[4]], "output_sizes": [[4]], "input_dtypes": ["Float"]}]})",
                            "rank_0.json", 0);
  ASSERT_EQ(d.entries.size(), 5u);
  EXPECT_EQ(d.entries[0].input_sizes(), "[[4]]");
  EXPECT_EQ(d.entries[0].input_numel(), 4);
  EXPECT_EQ(d.entries[1].input_sizes(), "[[4.0]]");
  EXPECT_EQ(d.entries[1].input_numel(), 0);  // a float dimension reads as unknown
  EXPECT_EQ(d.entries[2].output_sizes(), "null");
  EXPECT_EQ(d.entries[3].output_sizes(), "[]");
  EXPECT_EQ(d.entries[4].input_dtypes(), "[\"Float\"]");
  EXPECT_EQ(d.entries[4].input_numel(), 4);
}

// A pickle's entries name their calls and shapes by content, whether their frames are
// the same memoized nodes as another entry's (as PyTorch's pickler shares frame dicts),
// the same list node, equal values made anew, or the same nodes in another order.
TEST(DumpForms, PickleEntriesShareFramesAndShapesByContent) {
  auto u = [](const std::string& t) {
    std::string len;
    for (int k = 0; k < 4; ++k) len += static_cast<char>((t.size() >> (8 * k)) & 0xff);
    return "X" + len + t;
  };
  auto frame = [&](const std::string& name) { return "}(" + u("name") + u(name) + "u"; };
  auto entry = [&](int seq, const std::string& frames, const std::string& sizes) {
    return "}(" + u("pg_id") + "K\x00"s + u("collective_seq_id") + "K"s + static_cast<char>(seq) + u("frames") +
           frames + u("input_sizes") + sizes + "u";
  };
  const std::string four = "](](K\x04" "ee";
  const std::string four_float = "](](G\x40\x10\x00\x00\x00\x00\x00\x00" "ee"s;
  const std::string entries = entry(1, "]q\x03(" + frame("a") + "q\x01" + frame("b") + "q\x02" "e", four) +
                              entry(2, "](h\x01h\x02" "e", four_float) + entry(3, "](h\x02h\x01" "e", four) +
                              entry(4, "](" + frame("a") + frame("b") + "e", four_float) + entry(5, "](h\x01" "e", four) +
                              entry(6, "h\x03", four) + entry(7, u("x"), four);
  const FrDump d = parse_ok("\x80\x02}(" + u("rank") + "K\x00"s + u("entries") + "](" + entries + "eu.", "rank_0", 0);
  ASSERT_EQ(d.entries.size(), 7u);
  const std::vector<std::string> ops{"a", "a", "b", "a", "a", "a", ""};
  for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(d.entries[i].op_name().str(), ops[i]) << i;
  EXPECT_EQ(d.entries[0].call(), d.entries[3].call());
  EXPECT_EQ(d.entries[0].input_sizes(), "[[4]]");
  EXPECT_EQ(d.entries[1].input_sizes(), "[[4.0]]");
  EXPECT_EQ(d.entries[2].input_sizes(), "[[4]]");
  EXPECT_EQ(d.entries[3].input_numel(), 0);
  EXPECT_EQ(d.entries[4].input_numel(), 4);
}

// A pickle's shapes are found by a print of their values (strings by symbol): a string
// memoized or made anew, a tuple for a list, a digit string for a number, a dict, null
// and absent each read as their own text; an integer pg_id reads as its decimal, signed
// or not, whichever integers came before.
TEST(DumpForms, PickleShapesAndIntegerIdsReadByValue) {
  auto u = [](const std::string& t) {
    std::string len;
    for (int k = 0; k < 4; ++k) len += static_cast<char>((t.size() >> (8 * k)) & 0xff);
    return "X" + len + t;
  };
  auto entry = [&](int seq, const std::string& pg, const std::string& fields) {
    return "}(" + u("pg_id") + pg + u("collective_seq_id") + "K"s + static_cast<char>(seq) + fields + "u";
  };
  const std::string four = u("input_sizes") + "](](K\x04" "ee";
  const std::string minus_one = "J\xff\xff\xff\xff"s, max_u64 = "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"s;
  const std::string entries =
      entry(1, "K\x01", four + u("input_dtypes") + "](" + u("Float") + "q\x05" "e") +
      entry(2, "K\x11", four + u("input_dtypes") + "](h\x05" "e") +
      entry(3, "K\x01", u("input_sizes") + "](K\x04\x85" "e" + u("input_dtypes") + "](" + u("Float") + "e") +
      entry(4, minus_one, u("input_sizes") + "](](" + u("4") + "ee" + u("input_dtypes") + "](h\x05" "e") +
      entry(5, max_u64, four + u("input_dtypes") + "}(" + u("a") + "K\x01" "u") +
      entry(6, "K\x00"s, four + u("output_sizes") + "N") +
      entry(7, "K\x11", four + u("input_dtypes") + "](h\x05" "e");
  const FrDump d = parse_ok("\x80\x02}(" + u("rank") + "K\x00"s + u("entries") + "](" + entries + "eu.", "rank_0", 0);
  ASSERT_EQ(d.entries.size(), 7u);
  const std::vector<std::string> ids{"1", "17", "1", "-1", "18446744073709551615", "0", "17"};
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(d.entries[i].pg_id().str(), ids[i]) << i;
  for (size_t i : {0, 1, 2, 6}) {
    EXPECT_EQ(d.entries[i].input_sizes(), "[[4]]") << i;
    EXPECT_EQ(d.entries[i].input_dtypes(), "[\"Float\"]") << i;
    EXPECT_EQ(d.entries[i].output_sizes(), "[]") << i;
    EXPECT_EQ(d.entries[i].input_numel(), 4) << i;
    EXPECT_TRUE(d.entries[i].shape() == d.entries[0].shape()) << i;
  }
  EXPECT_EQ(d.entries[3].input_sizes(), "[[\"4\"]]");
  EXPECT_EQ(d.entries[3].input_numel(), 4);
  EXPECT_EQ(d.entries[4].input_dtypes(), "{\"a\":1}");
  EXPECT_EQ(d.entries[5].output_sizes(), "null");
  EXPECT_EQ(d.entries[5].input_dtypes(), "[]");
}

}  // namespace
}  // namespace fleetsim::diagnose
