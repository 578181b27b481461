#!/usr/bin/env bash
# scripts/diagnose-scale.sh refuses bad arguments with a located "error:" line and exit 2,
# before it makes dumps or measures anything; --help exits 0. Usage: diagnose_scale_args_test.sh SOURCE_DIR
set -uo pipefail
script="$1/scripts/diagnose-scale.sh"
source "$(dirname "$0")/args_check.sh"
check 2 "diagnose-scale.sh: error: --format: 'xml' is not pickle or json" --format xml
check 2 "--ranks: '12a' is not a positive rank count" --ranks 12a
check 2 "--ranks: '0' is not" --ranks 0
check 2 "--runs: '0' is not a positive count" --runs 0
check 2 "--ranks needs a value" --ranks
check 2 "unknown argument '--threads'" --threads 4
check 2 "--build: no fleetsim in '/nonexistent-fleetsim'" --build /nonexistent-fleetsim
out=$("$script" --help) || { echo "FAIL: --help exited $?"; fail=1; }
grep -q "^Usage: scripts/diagnose-scale.sh" <<<"$out" || { echo "FAIL: --help prints no usage"; fail=1; }
exit "$fail"
