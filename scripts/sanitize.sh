#!/usr/bin/env bash
# Builds fleetsim with AddressSanitizer and UBSan (GCC, Debug at -Og, ./build-asan)
# and runs the unit suite and every scenario under them: `fleetsim run
# --check-expect` (the run must meet its `expect:`) and `fleetsim diagnose` on
# its folder. Any sanitizer report stops the process and fails the script
# (docs/testing.md says what is left out and why).
# Usage: scripts/sanitize.sh [GTEST_ARGS...]   (e.g. --gtest_filter=...; given, the Open MPI pass is skipped)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -Og: every ASan and UBSan check is kept, and the build takes about half the compile time
# of -O1 (the sanitizers' instrumentation is what -O1 spends its time optimizing), for a
# run about a tenth slower: docs/testing.md, "Sanitizers".
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-Og -g1" \
      -DFLEETSIM_SANITIZE=ON -DFLEETSIM_WERROR=ON -DFLEETSIM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-asan -j"$(nproc)" --target fleetsim fleetsim_tests

# halt_on_error: the first report fails the test that caused it. The tests' counting
# operator delete (tests/support/alloc_counter.cc) calls free, also on the few blocks
# ASan's own operator new handed out: ASan would report those as new/free mismatches.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:alloc_dealloc_mismatch=0:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# The unit suite, less the golden transcripts: the scenario loop below runs every scenario.
# The tests that start Open MPI jobs of ASan-built runners run second, without leak
# detection: Open MPI and its plugins (unloaded before exit, so unnamed in the
# reports) leave their own allocations at exit. ASan and UBSan still check them.
# NcclBackend.SpinDemoOnTheCpuBackend is left to the Release build: it runs a real
# spinning runner for seconds, which under ASan only slows the job down. So are the
# TorchValidate.* runs (minutes of PyTorch processes; fleetsim's side of them, the
# launcher and the dump conversion, is in the suite: TorchBackend.*, MpiValidate.*).
# The two 16,384-rank tests (a size bound on summary.json and on the report page) run the
# code the smaller tests run, 2,048 times wider: the Release run checks their bounds.
mpi="MpiValidate.*:MpiCalibrate.*:NcclBackend.RunnerReportsNoDeviceAndExits"
at_scale="SummaryAtScale.*:ReportPage.BoundedAt16384Ranks"
# The two drill tests that play every incident of the library through (about 104 s and 50 s
# under ASan, about a fifth of the suite with them): the drill code they run is run under ASan by
# the other drill tests and the scenario loop; the Release run plays every incident.
drills="DrillPath.EveryIncidentScoresFullAlongItsFastestPathCitingOnlyWhatWasPrinted:DrillEvidence.PagesNeverReadANonPositiveDrop"
work="$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-asan.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# One shard per core (ASan makes the suite about 5x slower than Release).
shards="$(nproc)"
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" build-asan/tests/fleetsim_tests \
      --gtest_filter="-Scenario/Golden.*:NcclBackend.SpinDemoOnTheCpuBackend:TorchValidate.*:$mpi:$at_scale:$drills" --gtest_brief=1 "$@" \
      >"$work/shard$i.log" 2>&1 &
  pids+=($!)
done
failed=0
for ((i = 0; i < shards; i++)); do
  if wait "${pids[$i]}"; then
    grep -E '^\[  PASSED  \]' "$work/shard$i.log" | sed "s/^/shard $i: /"
  else
    echo "sanitize: FAILED: unit suite shard $i of $shards" >&2
    tail -n 80 "$work/shard$i.log" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
[ $# -eq 0 ] && ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" build-asan/tests/fleetsim_tests --gtest_filter="$mpi" --gtest_brief=1

# Every scenario of the library must meet its `expect:` and be diagnosed. Those of
# scenarios/validate/ are simulated too; their `expect:` is the real run's (a crash
# fault under mpirun ends the job, where the simulator reports the hang it causes
# among the survivors), so they are run without --check-expect. One scenario a core
# at a time; each writes its own folder and logs, and the first failure (in library
# order) is the one reported.
check_scenario() {
  local s="$1" name out check=(--check-expect)
  name="$(basename "$s" .yaml)"
  out="$work/$name"
  [[ "$s" == scenarios/validate/* ]] && check=()
  if ! build-asan/fleetsim run "$s" "${check[@]}" --out "$out" >"$work/$name.log" 2>&1; then
    echo "fleetsim run $s ${check[*]}" >"$work/$name.failed"
    cp "$work/$name.log" "$work/$name.why"
  elif ! build-asan/fleetsim diagnose "$out" >"$work/$name.diag" 2>&1; then
    echo "fleetsim diagnose $out" >"$work/$name.failed"
    cp "$work/$name.diag" "$work/$name.why"
  fi
}
scenarios=(scenarios/*.yaml scenarios/validate/*.yaml)
running=0
for s in "${scenarios[@]}"; do
  if [ "$running" -ge "$shards" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  check_scenario "$s" &
  running=$((running + 1))
done
wait
for s in "${scenarios[@]}"; do
  name="$(basename "$s" .yaml)"
  if [ -e "$work/$name.failed" ]; then
    echo "sanitize: FAILED: $(cat "$work/$name.failed")" >&2
    tail -n 60 "$work/$name.why" >&2
    exit 1
  fi
done
echo "sanitize: unit suite and ${#scenarios[@]} scenarios clean under ASan and UBSan"
