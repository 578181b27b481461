#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and every
# scenario in scenarios/ against its own `expect:`). This is what CI runs.
# In CI (CI=true), or with FLEETSIM_RELIABILITY=1, it then runs the sanitizer
# job (scripts/sanitize.sh) and the fuzzers (scripts/fuzz.sh); docs/testing.md.
# The pinned Python packages (torch) go into ./.venv first: scripts/venv.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage prints its wall time, so CI's budget can be read from its log.
stage() {
  local start=$SECONDS
  "$@"
  echo "test.sh: $* took $((SECONDS - start)) s"
}
stage scripts/install-deps.sh
stage scripts/venv.sh
stage scripts/build.sh -DFLEETSIM_WERROR=ON
# The tests run with a temporary directory of their own, which they must leave empty.
run_tests() {
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-ctest.XXXXXX")"
  TMPDIR="$tmp" ctest --test-dir build --output-on-failure -j"$(nproc)"
  if [ -n "$(ls -A "$tmp")" ]; then
    echo "test.sh: error: the tests left these in their temporary directory $tmp:" >&2
    ls -A "$tmp" | head -20 >&2
    return 1
  fi
  rmdir "$tmp"
}
stage run_tests
if [ "${CI:-}" = "true" ] || [ "${FLEETSIM_RELIABILITY:-0}" = "1" ]; then
  stage scripts/sanitize.sh
  stage scripts/fuzz.sh
fi
echo "test.sh: all stages passed in $SECONDS s"
