#!/usr/bin/env bash
# Makes ./.venv (ignored by git) holding the pinned Python packages of
# requirements.txt (torch for the PyTorch backend, the real-PyTorch fixtures and
# the checks against PyTorch's own flight-recorder analyzer). Installs only when
# requirements.txt changed since the last install; safe to run again.
# Env: FLEETSIM_BOOTSTRAP_PYTHON, the interpreter that makes the venv (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.fleetsim-requirements
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && cmp -s requirements.txt "$stamp"; then
  echo "venv: .venv matches requirements.txt"
  exit 0
fi
py="${FLEETSIM_BOOTSTRAP_PYTHON:-python3}"
[ -x .venv/bin/python ] || "$py" -m venv .venv
start=$(date +%s)
.venv/bin/python -m pip install --disable-pip-version-check --no-input -q -r requirements.txt
cp requirements.txt "$stamp"
echo "venv: installed requirements.txt into .venv in $(( $(date +%s) - start )) s"
