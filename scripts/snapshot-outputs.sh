#!/usr/bin/env bash
# Writes every scenario's run folder, printed summary and diagnose report into
# one snapshot folder, so that a refactor can prove it changed no output:
#
#   scripts/snapshot-outputs.sh build/fleetsim /tmp/before     # on the old commit
#   scripts/snapshot-outputs.sh build/fleetsim /tmp/after      # on the new one
#   diff -r /tmp/before /tmp/after && echo identical
#
# Paths inside the snapshot are relative (scenarios/NAME.yaml, --out NAME), so
# two checkouts in different folders give comparable snapshots.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 FLEETSIM_BINARY SNAPSHOT_DIR" >&2
  exit 2
fi
bin="$(realpath "$1")"
repo="$(cd "$(dirname "$0")/.." && pwd)"
snap="$2"
if [ -e "$snap" ]; then
  echo "$0: $snap already exists; give a new folder" >&2
  exit 2
fi
mkdir -p "$snap"
cd "$snap"
ln -s "$repo/scenarios" scenarios
for yaml in scenarios/*.yaml scenarios/validate/*.yaml; do
  name="$(basename "$yaml" .yaml)"
  case "$yaml" in scenarios/validate/*) name="validate_$name" ;; esac
  rc=0
  "$bin" run "$yaml" --out "$name" >"$name.run.txt" 2>&1 || rc=$?
  echo "exit $rc" >>"$name.run.txt"
  rc=0
  "$bin" diagnose "$name" >"$name.diagnose.txt" 2>&1 || rc=$?
  echo "exit $rc" >>"$name.diagnose.txt"
done
rm scenarios
echo "snapshot of $(ls -d */ | wc -l) runs in $snap"
