#!/usr/bin/env bash
# Builds every Google Benchmark suite (bench/*_bench.cc, whichever exist) and prints
# their numbers: heap and RNG costs, one collective round, lockstep rank-steps/s and
# bytes per rank at 1k/16k/131k ranks with the floor program beside them,
# FleetSim events/s, and whatever suites are added; then the 131,072-rank x
# 1,000-step run's wall time and peak memory (compare with
# BM_LockstepFloor/131072/1000). Usage: scripts/bench.sh [BUILD_DIR]
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
