#!/usr/bin/env bash
# Builds the Google Benchmark suites (bench/*_bench.cc) and prints their
# numbers: heap and RNG costs, one collective round, lockstep rank-steps/s and
# bytes per rank at 1k/16k/131k ranks with the floor program beside them,
# FleetSim events/s; then the 131,072-rank x 1,000-step run's wall time and peak
# memory (compare with BM_LockstepFloor/131072/1000). Usage: scripts/bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target frequent_bench simulation_bench fleetsim
for b in frequent_bench simulation_bench; do
  echo "== $b"
  "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_counters_tabular=true
done
echo "== fleetsim run bench/lockstep_131k.yaml (131,072 ranks x 1,000 steps)"
/usr/bin/time -v "$build/fleetsim" run bench/lockstep_131k.yaml --outputs summary,steps \
  --out "$build/bench_runs/lockstep_131k" 2>&1 |
  grep -E "executor|straggler|step time|Elapsed|User time|Maximum resident"
