// PyTorch's own analyzer reads fleetsim's dumps: `python -m
// torch.distributed.flight_recorder.fr_trace` (torch from the repository's .venv, made
// by scripts/venv.sh) on the founding case scaled to 8 ranks reports the rank, the
// sequence number and the op that `fleetsim diagnose --json` names on the same folder.
// Skipped without the venv, except under CI=true, where a missing venv fails.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/command.h"

namespace fs = std::filesystem;

namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;
const std::string kPython = fleetsim::test_support::venv_python();

bool have_fr_trace() {
  return fleetsim::test_support::python_imports("torch.distributed.flight_recorder.fr_trace");
}

// "{0, 3}" -> {0, 3}
std::set<int> rank_set(const std::string& text) {
  std::set<int> out;
  const std::regex num("\\d+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), num); it != std::sregex_iterator(); ++it)
    out.insert(std::stoi(it->str()));
  return out;
}

TEST(TorchValidate, FrTraceNamesTheCulpritDiagnoseNames) {
  if (!have_fr_trace()) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "CI=true but no torch at " << kPython << " (scripts/venv.sh)";
    GTEST_SKIP() << "no torch at " << kPython << " (scripts/venv.sh makes it)";
  }
  const fs::path out = fs::temp_directory_path() / ("fleetsim-frtrace-" + std::to_string(::getpid()));
  fs::remove_all(out);
  auto run = fleetsim::test_support::run_command(
      kBin + " run " + kSrc + "/scenarios/step400_hang.yaml --set fleet.nodes=1 --set parallel.tp=4 " +
      "--set parallel.dp=2 --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  ASSERT_TRUE(fs::exists(out / "fr" / "comm_lib_trace_rank_7")) << run.out;

  auto diag = fleetsim::test_support::run_command(kBin + " diagnose " + out.string() + " --json 2>/dev/null");
  const nlohmann::json d = nlohmann::json::parse(diag.out, nullptr, false);
  ASSERT_TRUE(d.is_object()) << diag.out;
  const std::set<int> culprit = d["culprit_ranks"].get<std::set<int>>();
  ASSERT_EQ(culprit, std::set<int>{0}) << diag.out;

  // Python's pickle loads the dump with the keys, order and value types of a genuine
  // torch 2.15 dump (tests/fixtures/real: gloo, so only the times differ in kind).
  const std::string check =
      "import pickle, sys\n"
      "sim = pickle.load(open(sys.argv[1], 'rb')); real = pickle.load(open(sys.argv[2], 'rb'))\n"
      "assert list(sim) == list(real), (list(sim), list(real))\n"
      "s, r = sim['entries'][-1], real['entries'][-1]\n"
      "assert list(s) == list(r), (list(s), list(r))\n"
      "bad = [k for k in r if s[k] is not None and r[k] is not None and type(s[k]) is not type(r[k])]\n"
      "assert not bad, bad\n"
      "assert type(s['process_group']) is tuple and s['state'] == 'scheduled'\n"
      "assert all(type(v) is int for st in sim['pg_status'].values() for v in st.values())\n"
      "print('pickle ok')\n";
  auto py = fleetsim::test_support::run_command("'" + kPython + "' -c \"" + check + "\" " +
                                                (out / "fr" / "comm_lib_trace_rank_0").string() + " " + kSrc +
                                                "/tests/fixtures/real/p2p_skip/comm_lib_trace_rank_0");
  EXPECT_EQ(py.exit_code, 0) << py.out;

  // Every rank dumped, so the analyzer runs without --allow-incomplete-ranks.
  auto fr = fleetsim::test_support::run_command("'" + kPython + "' -m torch.distributed.flight_recorder.fr_trace " +
                                                "-p comm_lib_trace_rank_ " + (out / "fr").string());
  ASSERT_EQ(fr.exit_code, 0) << fr.out;
  // Each "Not all ranks joining" block: the group, op and seq, and who joined. The
  // culprit is the one rank that joined diagnose's collective, and the only rank
  // missing from every other group's.
  const std::regex block(
      "Not all ranks joining collective, sequence number: (\\d+)\n[^\n]*\ngroup info: \\d+:(\\S+)\n"
      "collective: (\\S+)\nmissing ranks: (\\{[^}]*\\})\n(?:[^\n]*\n){3}expected ranks: (\\{[^}]*\\})");
  int blocks = 0, named = 0;
  for (auto it = std::sregex_iterator(fr.out.begin(), fr.out.end(), block); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ++blocks;
    const std::set<int> missing = rank_set(m[4].str());
    std::set<int> joined = rank_set(m[5].str());
    for (int r : missing) joined.erase(r);
    if (m[2].str() == d["process_group"]["desc"].get<std::string>()) {
      ++named;
      EXPECT_EQ(std::stoll(m[1].str()), d["collective_seq_id"].get<int64_t>()) << fr.out;
      EXPECT_EQ(m[3].str(), d["op"]["profiling_name"].get<std::string>()) << fr.out;
      EXPECT_EQ(joined, culprit) << fr.out;
    } else {
      EXPECT_EQ(missing, culprit) << fr.out;
    }
  }
  EXPECT_GE(blocks, 1) << fr.out;
  EXPECT_EQ(named, 1) << "fr_trace names diagnose's collective once\n" << fr.out << diag.out;
  if (!::testing::Test::HasFailure()) fs::remove_all(out);
}

}  // namespace
