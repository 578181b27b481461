#!/usr/bin/env bash
# Configures and builds fleetsim in ./build (Release, Ninja). Installs missing
# Debian packages first. Usage: scripts/build.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
