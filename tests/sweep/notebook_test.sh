#!/usr/bin/env bash
# Executes a notebook of notebooks/ (straggler_tax.ipynb unless NOTEBOOK is given) with
# jupyter nbconvert (Debian's jupyter-nbconvert, python3-matplotlib, python3-pandas, python3-ipykernel).
# Exits 77 (ctest: skipped) when they are missing. Usage: notebook_test.sh FLEETSIM SOURCE_DIR OUT_DIR [NOTEBOOK]
set -euo pipefail
fleetsim="$1"; src="$2"; out="$3"; notebook="${4:-straggler_tax.ipynb}"
command -v jupyter >/dev/null || { echo "jupyter not found: skipped"; exit 77; }
mkdir -p "$out"
cd "$src/notebooks"
FLEETSIM="$fleetsim" jupyter nbconvert --to notebook --execute "$notebook" --output-dir "$out" \
  --ExecutePreprocessor.timeout=300
