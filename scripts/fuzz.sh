#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ./build-fuzz) and runs each for
# a bounded time over its committed seed corpus. Prints per target the inputs run
# and the coverage reached; fails if any target crashes, leaks, or times out on an
# input (the input is kept under build-fuzz/artifacts/, see docs/testing.md).
# Usage: scripts/fuzz.sh [TARGET...]   (default: every tests/fuzz/*_fuzz.cc)
# Env: FUZZ_SECONDS per target (default 15), FUZZ_INPUT_TIMEOUT per input (default 25).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-15}"
input_timeout="${FUZZ_INPUT_TIMEOUT:-25}"

scripts/install-deps.sh
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -G Ninja -DFLEETSIM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$(nproc)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" _fuzz.cc)"); done
fi

# New inputs go to a scratch corpus (libFuzzer writes to its first folder only),
# so the committed seeds are read but never grow.
work="$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
artifacts="$PWD/build-fuzz/artifacts"
mkdir -p "$artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=()
printf '%-12s %10s %8s %8s %8s  %s\n' target execs cov ft exec/s result
for t in "${targets[@]}"; do
  bin="build-fuzz/tests/fuzz/${t}_fuzz"
  seeds="tests/fuzz/corpus/$t"
  [ -x "$bin" ] && [ -d "$seeds" ] || { echo "fuzz: no target or corpus for '$t'" >&2; exit 2; }
  mkdir -p "$work/$t"
  log="$work/$t.log"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout="$input_timeout" -print_final_stats=1 \
         -artifact_prefix="$artifacts/${t}-" "$work/$t" "$seeds" >"$log" 2>&1 || rc=$?
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")"
  rate="$(sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")"
  if [ "$rc" -eq 0 ]; then
    printf '%-12s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${rate:-?}" ok
  else
    printf '%-12s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "-" "-" "-" "FAILED (exit $rc)"
    echo "---- $t: last lines of the fuzzer's output" >&2
    tail -n 60 "$log" >&2
    echo "---- the input is kept in $artifacts/ (replay: $bin FILE)" >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no crash"
