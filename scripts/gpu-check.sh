#!/usr/bin/env bash
# The NCCL backend's checks on a machine with a GPU (docs/validate-gpu.md).
#   scripts/gpu-check.sh [BUILD_DIR]      (default build-gpucheck/)
# Builds fleetsim with the NCCL backend (tests and benchmarks off), then prints:
#   1. the devices (nvidia-smi, fleetsim-nccl-runner probe);
#   2. the single-GPU self-test: compute calibration (busy kernel requested vs
#      measured), a one-rank NCCL communicator, NVML idle and busy, and a kernel
#      spinning for a peer that never comes, read by NVML, timed out and aborted
#      by a watchdog thread;
#   3. the spin demonstration through the whole pipeline (`fleetsim validate
#      --backend nccl --spin-demo`): telemetry.csv with NVML's utilization, job.log's
#      watchdog lines, the flight recorder, diagnose; then the same scenario
#      without the spin, completing;
#   4. with 2 or more GPUs, `fleetsim calibrate --backend nccl` on all of them.
# Where the project's build dependencies (yaml-cpp, CLI11, Eigen, nlohmann-json,
# OpenMPI) are missing, it compiles the self-test alone with nvcc and g++ and
# runs only step 2. Everything printed is also kept in gpu-check.log in $OUT
# (if set) or BUILD_DIR/gpu-check/; the run folders go to BUILD_DIR/gpu-check-runs/. Each step is bounded with `timeout`; a failing step is
# reported and the script goes on. Exit status: 0 when every step that ran passed.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build-gpucheck}
KEEP=${OUT:-$B/gpu-check}
mkdir -p "$B" "$KEEP"
LOG=$KEEP/gpu-check.log
: >"$LOG"
say() { echo "$@" | tee -a "$LOG"; }
step() { say; say "== $*"; }
# run LIMIT_S CMD...: runs it with a time limit, output to the terminal and the log.
FAILED=0
run() {
  local limit=$1; shift
  say "\$ $*"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  say "(exit $rc)"
  return "$rc"
}
CUDA=${CUDA_HOME:-/usr/local/cuda}
export PATH=$CUDA/bin:$PATH

step "devices"
run 30 nvidia-smi -L || true
run 30 nvidia-smi --query-gpu=name,driver_version,memory.total,utilization.gpu,clocks.sm,power.draw --format=csv || true
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)

step "build (cmake + ninja, tests and benchmarks off)"
FULL=0
if run 300 cmake -S "$SRC" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLEETSIM_BUILD_TESTS=OFF \
       -DFLEETSIM_BUILD_BENCH=OFF && run 400 ninja -C "$B" fleetsim; then
  FULL=1
  [ -x "$B/fleetsim-nccl-runner" ] || { say "fleetsim-nccl-runner was not built (see cmake's STATUS lines above)"; FULL=0; }
fi
if [ ! -x "$B/fleetsim-gpu-selftest" ]; then
  step "fallback: the self-test alone, compiled with nvcc and g++"
  NCCL_INC=""; NCCL_LIB=""
  for d in "$CUDA/include" /usr/include /usr/local/include; do [ -f "$d/nccl.h" ] && NCCL_INC=$d && break; done
  for d in "$CUDA/lib" "$CUDA/lib64" /usr/lib/x86_64-linux-gnu /usr/local/lib; do
    ls "$d"/libnccl.so* >/dev/null 2>&1 && NCCL_LIB=$d && break
  done
  if [ -z "$NCCL_INC" ] || [ -z "$NCCL_LIB" ]; then  # NCCL from the nvidia-nccl wheel, if Python has it
    P=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) or list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
    [ -z "$P" ] && P=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
    [ -n "$P" ] && NCCL_INC=$P/include && NCCL_LIB=$P/lib
  fi
  say "nccl.h in '${NCCL_INC}', libnccl in '${NCCL_LIB}'"
  LIBNCCL=$(ls "$NCCL_LIB"/libnccl.so* 2>/dev/null | head -1)
  run 120 nvcc -std=c++17 -O2 -arch=sm_90 -I"$SRC" -c "$SRC/validate/nccl/kernels.cu" -o "$B/kernels.o" &&
  run 180 g++ -std=c++20 -O2 -I"$SRC" -I"$SRC/include" -isystem "$CUDA/include" -isystem "$NCCL_INC" \
      "$SRC/validate/nccl/selftest_main.cc" "$SRC/validate/nccl/selftest.cc" "$SRC/validate/nccl/device.cc" \
      "$SRC/validate/nccl/nccl_ops.cc" "$SRC/validate/nccl/nvml.cc" "$B/kernels.o" \
      -L"$CUDA/lib64" -L"$CUDA/lib" -lcudart_static -lrt -lpthread -ldl "$LIBNCCL" -Wl,-rpath,"$NCCL_LIB" \
      -o "$B/fleetsim-gpu-selftest" || FAILED=1
fi

if [ "$FULL" = 1 ]; then
  step "probe"
  run 60 "$B/fleetsim-nccl-runner" probe || FAILED=1
fi

step "single-GPU self-test"
if [ -x "$B/fleetsim-gpu-selftest" ]; then
  run 240 "$B/fleetsim-gpu-selftest" || FAILED=1
else
  say "no self-test binary"; FAILED=1
fi

if [ "$FULL" = 1 ]; then
  V=$B/gpu-check-runs  # the run folders stay in the build folder; the log has what matters
  rm -rf "$V"
  step "spin demonstration: fleetsim validate --backend nccl --spin-demo (watchdog 5 s)"
  run 120 "$B/fleetsim" validate "$SRC/validate/nccl/spin_1gpu.yaml" --backend nccl --spin-demo --spin-step 3 \
      --timeout 5s --out "$V/spin" || FAILED=1
  if [ -d "$V/spin/real" ]; then
    say "-- real/telemetry.csv (gpu_util = NVML utilization.gpu; nvml_util .. pcie columns from NVML)"
    tee -a "$LOG" <"$V/spin/real/telemetry.csv"
    say "-- real/job.log"
    tee -a "$LOG" <"$V/spin/real/job.log"
    say "-- real/fr/comm_lib_trace_rank_0 (last entries)"
    python3 -c 'import pickle,sys; d=pickle.load(open(sys.argv[1], "rb")); [print(e.get("collective_seq_id"), e.get("profiling_name"), e.get("state"), e.get("time_created_ns"), e.get("duration_ms")) for e in d["entries"][-4:]]' \
        "$V/spin/real/fr/comm_lib_trace_rank_0" 2>&1 | tee -a "$LOG"
    say "-- mpirun.log"
    tee -a "$LOG" <"$V/spin/mpirun.log"
    run 60 "$B/fleetsim" diagnose "$V/spin/real" || true
  fi
  step "the same scenario without the spin (must complete)"
  run 120 "$B/fleetsim" validate "$SRC/validate/nccl/spin_1gpu.yaml" --backend nccl --timeout 5s --out "$V/plain" || FAILED=1
  [ -f "$V/plain/real/telemetry.csv" ] && head -12 "$V/plain/real/telemetry.csv" | tee -a "$LOG"
  if [ "${NGPU:-0}" -ge 2 ]; then
    step "calibrate --backend nccl on $NGPU GPUs"
    run 300 "$B/fleetsim" calibrate --backend nccl --ranks "$NGPU" --max-bytes 256MiB --out "$KEEP/calibration.yaml" || FAILED=1
    [ -f "$KEEP/calibration.yaml" ] && tee -a "$LOG" <"$KEEP/calibration.yaml"
  else
    step "calibrate --backend nccl: skipped (needs 2 or more GPUs; found ${NGPU:-0})"
  fi
fi
step "done: $([ "$FAILED" = 0 ] && echo "every step passed" || echo "some step FAILED") (log: $LOG)"
exit "$FAILED"
