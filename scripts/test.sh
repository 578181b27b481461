#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and every
# scenario in scenarios/ against its own `expect:`). This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DFLEETSIM_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
