#!/usr/bin/env bash
# Measures `fleetsim diagnose` over many ranks' flight-recorder dumps, as docs/performance.md
# ("diagnose over many ranks' dumps") reports it: the founding case's dumps made by
# scripts/make-scale-dumps.py (kept in DIR and reused when already there), read once into the page
# cache, then RUNS runs of diagnose under GNU time with FLEETSIM_PHASES=1 (read / after-read split),
# then Python's parse alone of every file (pickle.load or json.load, the floor of any Python
# analyzer). Prints the figures; the report of the last run is left in DIR.report.
#
# Usage: scripts/diagnose-scale.sh [--build DIR] [--ranks N] [--format pickle|json] [--dir DIR]
#                                  [--runs K] [--no-python]
#   --build      the build folder (default build/)
#   --ranks      rank count (default 16384), --format the dump format (default pickle)
#   --dir        where the dumps are kept (default /tmp/fleetsim-scale-FORMAT-RANKS)
#   --runs       diagnose runs (default 3); --no-python skips Python's parse
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

usage_error() {
  echo "diagnose-scale.sh: error: $1" >&2
  echo "usage: scripts/diagnose-scale.sh [--build DIR] [--ranks N] [--format pickle|json] [--dir DIR] [--runs K] [--no-python]" >&2
  exit 2
}

build="$repo/build" ranks=16384 format=pickle dir="" runs=3 python=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build|--ranks|--format|--dir|--runs)
      [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"
      case "$1" in
        --build) build="$2" ;;
        --ranks) ranks="$2" ;;
        --format) format="$2" ;;
        --dir) dir="$2" ;;
        --runs) runs="$2" ;;
      esac
      shift 2 ;;
    --no-python) python=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
case "$format" in pickle|json) ;; *) usage_error "--format: '$format' is not pickle or json" ;; esac
[[ "$ranks" =~ ^[1-9][0-9]{0,6}$ ]] || usage_error "--ranks: '$ranks' is not a positive rank count"
[[ "$runs" =~ ^[1-9][0-9]{0,2}$ ]] || usage_error "--runs: '$runs' is not a positive count"
[ -n "$dir" ] || dir="/tmp/fleetsim-scale-$format-$ranks"
bin="$build/fleetsim"
py="$repo/.venv/bin/python"
[ -x "$bin" ] || usage_error "--build: no fleetsim in '$build' (scripts/build.sh builds it)"
[ -x "$py" ] || usage_error "no Python at $py (scripts/venv.sh makes it)"

if [ ! -d "$dir" ] || [ "$(find "$dir" -maxdepth 1 -type f | wc -l)" -ne "$ranks" ]; then
  rm -rf "$dir"
  "$py" "$repo/scripts/make-scale-dumps.py" --ranks "$ranks" --format "$format" --out "$dir" --jobs "$(nproc)"
fi
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
     "load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git -C "$repo" rev-parse --short HEAD); $(date -u +%FT%TZ)"
echo "# $ranks ranks, $format, $(du -sh "$dir" | cut -f1)"
cat "$dir"/* >/dev/null  # into the page cache: the runs time the parse, not the disk
for i in $(seq "$runs"); do
  FLEETSIM_PHASES=1 /usr/bin/time -f "diagnose: %U user %S sys %e wall %M KB peak %R minor faults" \
    "$bin" diagnose "$dir" >"$dir.report" 2>"$dir.err" || { cat "$dir.err" >&2; exit 1; }
  grep -E '^phase (read|diagnosis)' "$dir.err"
  tail -n 1 "$dir.err"
done
grep -E '^(Culprit|Where):' "$dir.report" || true
if [ "$python" = 1 ]; then
  "$py" - "$dir" "$format" <<'EOF'
import json, os, pickle, sys, time
folder, fmt = sys.argv[1], sys.argv[2]
load = pickle.load if fmt == "pickle" else json.load
wall, cpu = time.perf_counter(), time.process_time()
for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), "rb") as f:
        load(f)
print(f"python {fmt}.load of every file: {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall")
EOF
fi
