#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and every
# scenario in scenarios/ against its own `expect:`). This is what CI runs.
# In CI (CI=true), or with FLEETSIM_RELIABILITY=1, it then runs the sanitizer
# job (scripts/sanitize.sh) and the fuzzers (scripts/fuzz.sh); docs/testing.md.
# The pinned Python packages (torch) go into ./.venv first: scripts/venv.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/venv.sh
scripts/build.sh -DFLEETSIM_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${CI:-}" = "true" ] || [ "${FLEETSIM_RELIABILITY:-0}" = "1" ]; then
  scripts/sanitize.sh
  scripts/fuzz.sh
fi
