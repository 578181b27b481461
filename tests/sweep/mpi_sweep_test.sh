#!/usr/bin/env bash
# `mpirun -np 2 fleetsim sweep ...` must print exactly what the threaded sweep
# prints. Exits 77 (ctest: skipped) when mpirun is missing or fleetsim was built
# without MPI. Usage: mpi_sweep_test.sh FLEETSIM SCENARIO
set -euo pipefail
fleetsim="$1"; scenario="$2"
command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
ldd "$fleetsim" | grep libmpi >/dev/null || { echo "fleetsim built without MPI: skipped"; exit 77; }
args=(sweep "$scenario" --vary fleet.nodes=1,2,4 --vary job.seed=1,2 --seeds 3 --set job.steps=100 --format csv)
threaded=$("$fleetsim" "${args[@]}" --threads 2)
mpi=$(mpirun --allow-run-as-root --oversubscribe -np 2 "$fleetsim" "${args[@]}" --threads 1)
if [ "$threaded" != "$mpi" ]; then
  echo "MPI sweep differs from the threaded sweep"; diff <(echo "$threaded") <(echo "$mpi") || true; exit 1
fi
echo "$mpi"
