#!/usr/bin/env bash
# Installs what fleetsim needs from Debian's packages, only what is missing.
# Safe to run again; needs root (or sudo) on a fresh Debian 12 machine.
set -euo pipefail
pkgs=(cmake g++ ninja-build pkg-config libyaml-cpp-dev libcli11-dev libeigen3-dev
      libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libsimdjson-dev
      libopenmpi-dev openmpi-bin time clang-14 libfuzzer-14-dev
      jupyter-nbconvert python3-matplotlib python3-pandas python3-ipykernel python3-venv
      chromium)  # headless, for the report page's browser test (about 50 s to install)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
