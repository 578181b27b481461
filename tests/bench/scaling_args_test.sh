#!/usr/bin/env bash
# scripts/scaling.sh refuses bad arguments with a located "error:" line and exit 2,
# before it builds or measures anything; --help exits 0. Usage: scaling_args_test.sh SOURCE_DIR
set -uo pipefail
script="$1/scripts/scaling.sh"
source "$(dirname "$0")/args_check.sh"
check 2 "--ranks: '12x' is not a positive multiple of 8" --ranks 1024,12x
check 2 "--ranks: '1020' is not a positive multiple of 8" --ranks 1020
check 2 "--ranks: '0' is not" --ranks 0
check 2 "--ranks needs a value" --ranks
check 2 "--cases: unknown case 'lockstep'" --cases founding,lockstep
check 2 "unknown argument '--executor'" --executor event
check 2 "--event-cpu-limit: '-1' is not a number" --event-cpu-limit -1
check 2 "--out: folder '/nonexistent-fleetsim' does not exist" --out /nonexistent-fleetsim/scaling.csv
out=$("$script" --help) || { echo "FAIL: --help exited $?"; fail=1; }
grep -q "^Usage: scripts/scaling.sh" <<<"$out" || { echo "FAIL: --help prints no usage"; fail=1; }
exit "$fail"
