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
stage ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${CI:-}" = "true" ] || [ "${FLEETSIM_RELIABILITY:-0}" = "1" ]; then
  stage scripts/sanitize.sh
  stage scripts/fuzz.sh
fi
echo "test.sh: all stages passed in $SECONDS s"
