#!/usr/bin/env bash
# Measures how fleetsim's cost grows with the fleet, for notebooks/scaling.ipynb: wall time, CPU time
# and peak memory of `fleetsim run` per executor and rank count (GNU time), and the step model's cost
# per distinct step (Google Benchmark's JSON). Writes one CSV (default notebooks/data/scaling.csv).
#
# Usage: scripts/scaling.sh [--build DIR] [--ranks LIST] [--cases LIST] [--event-cpu-limit SECONDS] [--out FILE]
#   --build, --out     the build folder (default build/) and the CSV, relative to the current folder
#   --ranks            rank counts, multiples of 8 (default 1024,4096,16384,65536,131072)
#   --cases            founding, uniform, step_model, comma-separated (default all three)
#   --event-cpu-limit  the event executor stops before a size whose CPU time, extrapolated from the
#                      sizes before it, would pass this (default 60)
# Cases:
#   founding    scenarios/step400_hang.yaml --set fleet.nodes=R/8 --set parallel.dp=R/8 --outputs summary
#               (tp 8; 399 uniform steps, then the hang and the 10-minute watchdog); executors event, hybrid
#               (lockstep does not apply: its `when` reads the rank)
#   uniform     bench/lockstep_131k.yaml --set fleet.nodes=R/8 --outputs summary (tp 1, 1,000 steps of
#               jittered compute and a data-parallel all-reduce); executors event, lockstep, hybrid
#   step_model  one 1 MiB world all-reduce under `collective_model: steps` (NCCL Ring, every member
#               arriving at a different time, fresh model): BM_RingStepsFleetAllReduce (executor
#               closed_form) and BM_RingStepsFleetReference (executor recurrence, the O(n^2) model it
#               replaced), at the rank counts the benchmark has that --ranks lists
# The CSV opens with `#` lines (machine, load average before and after, date, commit), then:
#   case       founding | uniform | step_model
#   executor   event | lockstep | hybrid (the one `fleetsim run` reported) | closed_form | recurrence
#   ranks      the fleet's rank count
#   repeats    runs averaged (short runs are repeated so that GNU time's 10 ms resolution stays small);
#              benchmark iterations for step_model
#   wall_s     wall-clock seconds of one run (one call for step_model)
#   cpu_s      user + system CPU seconds of one run (one call for step_model)
#   max_rss_kb peak resident memory of the process, KiB (empty for step_model)
#   load1      the 1-minute load average just before the measurement
#   note       empty, the benchmark's name, or why a size was skipped (its other columns empty then)
# Rows come in a fixed order: case, then executor, then ranks ascending. Exit 2 on bad arguments.
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "$0")/.."

usage_error() {
  echo "scaling.sh: error: $1" >&2
  echo "usage: scripts/scaling.sh [--build DIR] [--ranks LIST] [--cases LIST] [--event-cpu-limit SECONDS] [--out FILE]" >&2
  exit 2
}

build=""
ranks_arg=1024,4096,16384,65536,131072
cases_arg=founding,uniform,step_model
event_cpu_limit=60
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build|--ranks|--cases|--event-cpu-limit|--out)
      [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"
      case "$1" in
        --build) build="$2" ;;
        --ranks) ranks_arg="$2" ;;
        --cases) cases_arg="$2" ;;
        --event-cpu-limit) event_cpu_limit="$2" ;;
        --out) out="$2" ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done

ranks=()
IFS=, read -r -a items <<<"$ranks_arg"
for r in "${items[@]}"; do
  [[ "$r" =~ ^[1-9][0-9]{0,6}$ ]] && (( r % 8 == 0 )) ||
    usage_error "--ranks: '$r' is not a positive multiple of 8 (a rank count, 8 GPUs a node)"
  ranks+=("$r")
done
[ ${#ranks[@]} -gt 0 ] || usage_error "--ranks is empty"
mapfile -t ranks < <(printf '%s\n' "${ranks[@]}" | sort -n -u)

declare -A want_case=()
IFS=, read -r -a items <<<"$cases_arg"
for c in "${items[@]}"; do
  case "$c" in
    founding|uniform|step_model) want_case[$c]=1 ;;
    *) usage_error "--cases: unknown case '$c' (expected founding, uniform or step_model)" ;;
  esac
done
[[ "$event_cpu_limit" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  usage_error "--event-cpu-limit: '$event_cpu_limit' is not a number of seconds"
# --build and --out are read from the caller's folder (the defaults from the repository root).
resolve() { if [ -z "$1" ]; then echo "$2"; elif [[ "$1" = /* ]]; then echo "$1"; else echo "$caller_dir/$1"; fi; }
build=$(resolve "$build" build)
out=$(resolve "$out" notebooks/data/scaling.csv)
[ -d "$(dirname "$out")" ] || usage_error "--out: folder '$(dirname "$out")' does not exist"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build" -j"$(nproc)" --target fleetsim frequent_bench >&2
fleetsim="$build/fleetsim"
work=$(mktemp -d /tmp/fleetsim-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT
csv="$work/scaling.csv"

load1() { cut -d' ' -f1 /proc/loadavg; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit (uncommitted changes)"
{
  echo "# fleetsim scaling measurements, written by scripts/scaling.sh (columns: see its header)"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# commit: $commit"
  echo "case,executor,ranks,repeats,wall_s,cpu_s,max_rss_kb,load1,note"
} >"$csv"

# time_runs REPEATS SCENARIO ARGS...: runs fleetsim REPEATS times under GNU time (the last run's
# stdout in $work/stdout); prints "wall user sys max_rss_kb" for all of them together.
time_runs() {
  local reps="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    bash -c 'for ((i = 0; i < $0; i++)); do "${@:2}" >"$1" || exit 1; done' \
    "$reps" "$work/stdout" "$fleetsim" run "$@" --outputs summary --out "$work/run" --force
  cat "$work/time"
}

# measure CASE EXECUTOR RANKS SCENARIO ARGS...: one row; sets last_cpu to one run's CPU seconds.
measure() {
  local case="$1" executor="$2" r="$3"; shift 3
  local load ran t reps wall user sys rss
  load=$(load1)
  t=$(time_runs 1 "$@" --executor "$executor")
  ran=$(awk '$1 == "executor" { sub(":", "", $2); print $2 }' "$work/stdout")
  [ "$ran" = "$executor" ] || { echo "scaling.sh: $case at $r ranks ran on '$ran', not $executor" >&2; exit 1; }
  # Runs under a second of CPU are repeated up to ~1 s of CPU (at most 100 runs).
  reps=$(awk -v t="$t" 'BEGIN { split(t, f, " "); c = f[2] + f[3]; n = (c < 0.01) ? 100 : int(1 / c);
                               print (n < 1) ? 1 : (n > 100 ? 100 : n) }')
  [ "$reps" -eq 1 ] || t=$(time_runs "$reps" "$@" --executor "$executor")
  read -r wall user sys rss <<<"$t"
  last_cpu=$(awk -v u="$user" -v s="$sys" -v n="$reps" 'BEGIN { printf "%.4f", (u + s) / n }')
  printf '%s,%s,%s,%s,%s,%s,%s,%s,\n' "$case" "$executor" "$r" "$reps" \
    "$(awk -v w="$wall" -v n="$reps" 'BEGIN { printf "%.4f", w / n }')" "$last_cpu" "$rss" "$load" >>"$csv"
  echo "  $case $executor $r ranks: $last_cpu s CPU a run (mean of $reps, load $load)" >&2
}

# run_case CASE EXECUTOR SCENARIO SETS...: every rank count; SETS may hold {N} (nodes).
run_case() {
  local case="$1" executor="$2" scenario="$3"; shift 3
  local prev_r="" prev_cpu="" ppr="" ppc="" r i s predicted args
  for ((i = 0; i < ${#ranks[@]}; i++)); do
    r=${ranks[$i]}
    if [ "$executor" = event ] && [ -n "$prev_cpu" ]; then
      # Extrapolate from the last two sizes' slope (1 with one size), log-log.
      predicted=$(awk -v r="$r" -v pr="$prev_r" -v pc="$prev_cpu" -v r0="$ppr" -v c0="$ppc" 'BEGIN {
        k = (r0 != "" && c0 > 0 && pc > 0) ? log(pc / c0) / log(pr / r0) : 1; if (k < 1) k = 1;
        printf "%.0f", pc * exp(k * log(r / pr)) }')
      if awk -v p="$predicted" -v l="$event_cpu_limit" 'BEGIN { exit !(p > l) }'; then
        for ((; i < ${#ranks[@]}; i++)); do
          printf '%s,event,%s,,,,,,skipped: about %s s of CPU predicted (limit %s s)\n' \
            "$case" "${ranks[$i]}" "$predicted" "$event_cpu_limit" >>"$csv"
        done
        echo "  $case event stops before ${r} ranks (about $predicted s of CPU predicted)" >&2
        return
      fi
    fi
    args=()
    for s in "$@"; do args+=(--set "${s//\{N\}/$((r / 8))}"); done
    measure "$case" "$executor" "$r" "$scenario" "${args[@]}"
    ppr="$prev_r"; ppc="$prev_cpu"; prev_r="$r"; prev_cpu="$last_cpu"
  done
}

if [ -n "${want_case[founding]:-}" ]; then
  for e in event hybrid; do
    run_case founding "$e" scenarios/step400_hang.yaml "fleet.nodes={N}" "parallel.dp={N}"
  done
fi
if [ -n "${want_case[uniform]:-}" ]; then
  for e in event lockstep hybrid; do
    run_case uniform "$e" bench/lockstep_131k.yaml "fleet.nodes={N}"
  done
fi

# The step model: whichever bench binary has the fleet ring benchmarks.
if [ -n "${want_case[step_model]:-}" ]; then
  bench=""
  for b in "$build"/bench/*_bench; do
    "$b" --benchmark_list_tests | grep -q '^BM_RingStepsFleetAllReduce/' && { bench="$b"; break; }
  done
  [ -n "$bench" ] || { echo "scaling.sh: no bench binary has BM_RingStepsFleetAllReduce" >&2; exit 1; }
  load=$(load1)
  echo "  step_model: $bench (load $load)" >&2
  "$bench" --benchmark_filter='^BM_RingStepsFleet(AllReduce|Reference)/' --benchmark_format=json \
    --benchmark_min_time=0.2 >"$work/bench.json"
  python3 - "$work/bench.json" "$load" "${ranks[*]}" >>"$csv" <<'EOF'
import json, sys
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
executor = {"BM_RingStepsFleetAllReduce": "closed_form", "BM_RingStepsFleetReference": "recurrence"}
wanted = {int(r) for r in sys.argv[3].split()}
rows = []
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    name, _, arg = b["name"].partition("/")
    if b.get("run_type", "iteration") != "iteration" or int(arg) not in wanted:
        continue
    k = scale[b["time_unit"]]
    rows.append((list(executor).index(name), int(arg), executor[name], b["iterations"],
                 b["real_time"] * k, b["cpu_time"] * k, b["name"]))
if not rows:
    print(f"scaling.sh: the step model's benchmarks have none of ranks {sorted(wanted)}", file=sys.stderr)
for _, r, e, n, wall, cpu, bm in sorted(rows):
    print(f"step_model,{e},{r},{n},{wall:.7f},{cpu:.7f},,{sys.argv[2]},{bm}")
EOF
fi

sed -i "3a # load average after: $(cut -d' ' -f1-3 /proc/loadavg)" "$csv"
cp "$csv" "$out"
echo "wrote $out" >&2
