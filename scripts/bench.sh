#!/usr/bin/env bash
# Builds every Google Benchmark suite (bench/*_bench.cc, whichever exist) and prints
# their numbers: heap and RNG costs, one collective round, lockstep rank-steps/s and
# bytes per rank at 1k/16k/131k ranks with the floor program beside them,
# FleetSim events/s, and whatever suites are added; then the 131,072-rank x
# 1,000-step run's wall time and peak memory (compare with
# BM_LockstepFloor/131072/1000), and the founding case at 131,072 ranks on the
# hybrid beside the lockstep run of its fleet (bench/founding_lockstep_131k.yaml),
# with the ratio of their CPU times. Usage: scripts/bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
benches=()
for src in bench/*_bench.cc; do
  name=$(basename "$src" .cc)
  benches+=("$name")
done
[ ${#benches[@]} -gt 0 ] || { echo "bench.sh: no bench/*_bench.cc" >&2; exit 1; }
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${benches[@]}" fleetsim
for b in "${benches[@]}"; do
  echo "== $b"
  "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_counters_tabular=true
done
echo "== fleetsim run bench/lockstep_131k.yaml (131,072 ranks x 1,000 steps)"
/usr/bin/time -v "$build/fleetsim" run bench/lockstep_131k.yaml --outputs summary,steps \
  --out "$build/bench_runs/lockstep_131k" --force 2>&1 |
  grep -E "executor|straggler|step time|Elapsed|User time|Maximum resident"
echo "== founding case at 131,072 ranks (hybrid) against the lockstep run of its fleet"
cpu() {  # user + sys seconds of one run (the founding case exits non-zero: it hangs)
  { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null || true; } | tail -1 | awk '{print $1 + $2}'
}
founding=$(cpu "$build/fleetsim" run scenarios/step400_hang.yaml --set fleet.nodes=16384 --set parallel.dp=16384 \
  --outputs summary --out "$build/bench_runs/founding_131k" --force)
lockstep=$(cpu "$build/fleetsim" run bench/founding_lockstep_131k.yaml --executor lockstep --outputs summary \
  --out "$build/bench_runs/founding_lockstep_131k" --force)
awk -v f="$founding" -v l="$lockstep" \
  'BEGIN { printf "founding case %.2f s CPU, lockstep run of its fleet %.2f s CPU: %.2fx\n", f, l, f / l }'
