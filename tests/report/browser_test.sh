#!/usr/bin/env bash
# `fleetsim report` in headless Chromium: the founding case's page loads with no
# console message (an uncaught error would be one) and its screenshot shows the heat
# map: the canvas's plot area is mostly heat-coloured pixels, and the same page
# without its script shows almost none. Skips (77) without chromium or python3.
# Usage: browser_test.sh FLEETSIM_BIN SOURCE_DIR WORK_DIR
set -euo pipefail
bin=$1 src=$2 work=$3
command -v chromium >/dev/null || { echo "skip: no chromium (Debian package chromium)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
"$bin" run "$src/scenarios/step400_hang.yaml" --out "$work/run" >/dev/null
"$bin" report "$work/run" -o "$work/report.html"
sed '/^<script>$/,/^<\/script>$/d' "$work/report.html" > "$work/no-script.html"

shoot() {  # PAGE PNG LOG
  timeout 120 chromium --headless --disable-gpu --no-sandbox --enable-logging=stderr --v=0 \
    --hide-scrollbars --window-size=1000,1100 --screenshot="$2" "file://$1" 2>"$3" >/dev/null
}
shoot "$work/report.html" "$work/report.png" "$work/chromium.log"
if grep -q ':CONSOLE' "$work/chromium.log"; then
  echo "FAIL: the page logged to the console:"; grep ':CONSOLE' "$work/chromium.log"; exit 1
fi
shoot "$work/no-script.html" "$work/no-script.png" "$work/no-script.log"

read -r cw ch < <(grep -o 'id="heatmap" data-layer="0" width="[0-9]*" height="[0-9]*"' "$work/report.html" |
                  sed 's/.*width="\([0-9]*\)" height="\([0-9]*\)"/\1 \2/')
plot=$(( (cw - 182) * (ch - 58) ))   # the canvas less its labels (170 + 12 px) and margins (8 + 50 px)
read -r _ _ with < <(python3 "$src/tests/report/png_heat_pixels.py" "$work/report.png")
read -r _ _ without < <(python3 "$src/tests/report/png_heat_pixels.py" "$work/no-script.png")
echo "heat map plot area ${plot} px; heat-coloured pixels: ${with} with the script, ${without} without"
[ "$with" -ge $(( plot * 9 / 10 )) ] || { echo "FAIL: the screenshot shows too little of the heat map"; exit 1; }
[ "$without" -le $(( plot / 20 )) ] || { echo "FAIL: heat colours without the script: the count proves nothing"; exit 1; }
echo "PASS"
