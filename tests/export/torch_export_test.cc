// `fleetsim export torch`: the founding case's script against its golden copy,
// the fix's script differing only where the fix does, `when` conditions as
// Python, every fault kind either real code or a clear refusal, and every
// exportable scenario's script compiling as Python.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/export/py_expr.h"
#include "sim/export/torch_export.h"
#include "sim/run/run.h"
#include "tests/support/command.h"

namespace fs = std::filesystem;

namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;

std::string export_of(const std::string& scenario, int* exit_code = nullptr) {
  auto r = fleetsim::test_support::run_command("cd " + kSrc + " && " + kBin + " export torch " + scenario);
  if (exit_code) *exit_code = r.exit_code;
  return r.out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

std::string py(const std::string& when) {
  auto r = fleetsim::exporter::when_to_python(when);
  return r.ok() ? *r : "error: " + r.errors().front().message;
}

TEST(TorchExport, FoundingCaseMatchesItsGoldenScript) {
  const std::string now = export_of("scenarios/step400_hang.yaml");
  EXPECT_NE(now.find("    if rank == 0 and step % 400 == 0:\n        all_reduce(\"loss\", T[\"loss\"], group=\"world\")\n"),
            std::string::npos)
      << now;
  const fs::path golden = fs::path(kSrc) / "tests/golden/step400_hang/export_torch.py";
  if (const char* u = std::getenv("FLEETSIM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(golden, std::ios::binary) << now;
    return;
  }
  std::ifstream in(golden, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << golden << "; rerun with FLEETSIM_UPDATE_GOLDEN=1";
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (before == now) return;
  const auto a = lines_of(before), b = lines_of(now);
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  ADD_FAILURE() << "the export differs from " << golden << " at line " << i + 1 << ":\n  golden: "
                << (i < a.size() ? a[i] : "(end)") << "\n  now:    " << (i < b.size() ? b[i] : "(end)")
                << "\nif intended, rerun with FLEETSIM_UPDATE_GOLDEN=1 and review `git diff tests/golden`";
}

// The fixed scenario's script differs from the founding case's only in its
// header (name, description, file) and where the fix does: the condition and
// the print gated on rank 0.
TEST(TorchExport, FixDiffersOnlyWhereTheFixDoes) {
  const auto hang = lines_of(export_of("scenarios/step400_hang.yaml"));
  const auto fixed = lines_of(export_of("scenarios/step400_fixed.yaml"));
  ASSERT_EQ(hang.size() + 1, fixed.size());
  std::vector<std::string> removed, added;
  size_t i = 0, j = 0;
  while (i < hang.size() && j < fixed.size()) {
    if (hang[i] == fixed[j]) { ++i; ++j; continue; }
    // One-line substitutions, and the one inserted `if rank == 0:` line.
    if (fixed[j] == "        if rank == 0:") { added.push_back(fixed[j++]); continue; }
    removed.push_back(hang[i++]);
    added.push_back(fixed[j++]);
  }
  const std::vector<std::string> want_removed = {
      "\"\"\"step400-hang: Rank 0 all-reduces the loss to log it every 400 steps; no other rank does.",
      "Exported by `fleetsim export torch` from scenarios/step400_hang.yaml: the scenario as a PyTorch job.",
      "    torchrun --nproc-per-node 32 step400_hang.py [--backend gloo] [--time-scale 0.1] [--bytes-scale 0.001] "
      "[--timeout 5]",
      "    if rank == 0 and step % 400 == 0:",
      "        log(f\"step {step} loss {value(T['loss']):.4f}\")"};
  const std::vector<std::string> want_added = {
      "\"\"\"step400-fixed: Every rank all-reduces the loss every 400 steps; only rank 0 prints it.",
      "Exported by `fleetsim export torch` from scenarios/step400_fixed.yaml: the scenario as a PyTorch job.",
      "    torchrun --nproc-per-node 32 step400_fixed.py [--backend gloo] [--time-scale 0.1] [--bytes-scale 0.001] "
      "[--timeout 5]",
      "    if step % 400 == 0:",
      "        if rank == 0:",
      "            log(f\"step {step} loss {value(T['loss']):.4f}\")"};
  EXPECT_EQ(removed, want_removed);
  EXPECT_EQ(added, want_added);
}

TEST(TorchExport, WhenConditionsKeepTheirValueInPython) {
  EXPECT_EQ(py("rank == 0 && step % 400 == 0"), "rank == 0 and step % 400 == 0");
  EXPECT_EQ(py("step % 400 == 0"), "step % 400 == 0");
  EXPECT_EQ(py("!(rank == 0) || tp_rank != 1"), "not rank == 0 or tp_rank != 1");
  EXPECT_EQ(py("!rank == 0"), "(not rank) == 0");               // C's `!` binds tighter than `==`
  EXPECT_EQ(py("rank < 2 == 1"), "(rank < 2) == 1");             // Python would chain the comparisons
  EXPECT_EQ(py("(rank && step) + 1 > 1"), "bool(rank and step) + 1 > 1");  // 0/1, not an operand
  EXPECT_EQ(py("step / 4 * 4"), "step // 4 * 4");
  EXPECT_EQ(py("(step - 5) % 4 == 3"), "_c_mod(step - 5, 4) == 3");  // C's remainder for negatives
  EXPECT_EQ(py("-rank / 2"), "_c_div(-rank, 2)");
  EXPECT_EQ(py("(rank == 0) && (step > 3 || step < 2)"), "rank == 0 and (step > 3 or step < 2)");
}

// A fault with no real form (the hardware changes under the job) is refused at
// the fault, never dropped; the others are code in the script.
TEST(TorchExport, FaultsAreRealCodeOrRefused) {
  int rc = 0;
  const std::string out = export_of("scenarios/slow_nic.yaml", &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("scenarios/slow_nic.yaml:"), std::string::npos) << out;
  EXPECT_NE(out.find("fault `link` has no real form in a PyTorch script"), std::string::npos) << out;
  const std::string stall = export_of("scenarios/validate/stall_4ranks.yaml");
  EXPECT_NE(stall.find("    if rank == 2 and step == 8:  # fault `stall` (scenarios/validate/stall_4ranks.yaml:"),
            std::string::npos) << stall;
  EXPECT_NE(stall.find("        stall_forever(\"data_loader\")"), std::string::npos);
  const std::string crash = export_of("scenarios/crash_rank.yaml");
  EXPECT_NE(crash.find("        crash()"), std::string::npos) << crash;
  const std::string skip = export_of("scenarios/validate/skip_4ranks.yaml");
  EXPECT_NE(skip.find("    if rank == 3 and step == 10:  # fault `skip`"), std::string::npos) << skip;
  EXPECT_NE(skip.find("    else:\n        all_reduce(\"grads\", T[\"grads\"], group=\"dp\")"), std::string::npos);
  const std::string mism = export_of("scenarios/mismatched_sizes.yaml");
  EXPECT_NE(mism.find("T[\"grads_mismatch\"]"), std::string::npos) << mism;
  const std::string slow = export_of("scenarios/straggler_slow_gpu.yaml");
  EXPECT_NE(slow.find("        x *= "), std::string::npos) << slow;
}

// Every scenario that exports gives a script Python compiles.
TEST(TorchExport, EveryExportCompilesAsPython) {
  if (fleetsim::test_support::run_command("python3 -c pass").exit_code != 0) GTEST_SKIP() << "no python3";
  const fs::path tmp = fs::temp_directory_path() / ("fleetsim-export-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  int compiled = 0;
  for (const char* dir : {"scenarios", "scenarios/validate"})
    for (const auto& e : fs::directory_iterator(fs::path(kSrc) / dir)) {
      if (e.path().extension() != ".yaml") continue;
      const std::string py_file = (tmp / (e.path().stem().string() + ".py")).string();
      auto r = fleetsim::test_support::run_command(kBin + " export torch " + e.path().string() + " -o " + py_file);
      if (r.exit_code == 2 && r.out.find("has no real form") != std::string::npos) continue;
      ASSERT_EQ(r.exit_code, 0) << e.path() << ": " << r.out;
      auto c = fleetsim::test_support::run_command("python3 -m py_compile " + py_file);
      EXPECT_EQ(c.exit_code, 0) << e.path() << ": " << c.out;
      ++compiled;
    }
  fs::remove_all(tmp);
  EXPECT_GT(compiled, 20);
}

}  // namespace
