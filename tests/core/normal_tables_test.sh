#!/usr/bin/env bash
# The committed ziggurat tables are exactly what their generator writes:
# runs scripts/gen_normal_tables.py (Python's decimal module, no libm) and
# compares with include/fleetsim/normal_tables.h byte for byte. Exits 77
# (ctest: skipped) without python3. Usage: normal_tables_test.sh SOURCE_DIR OUT_FILE
set -euo pipefail
src="$1"; out="$2"
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
python3 "$src/scripts/gen_normal_tables.py" > "$out"
cmp "$out" "$src/include/fleetsim/normal_tables.h"
echo "normal_tables.h matches its generator"
