#!/bin/sh
# `crucible report` rendered by headless Chromium: a real batch on a real
# coordinator and CPU worker, the report written through the client library,
# then a screenshot whose plot regions must hold drawn (non-background)
# pixels. SHOT=path keeps the screenshot for a reader.
. "$(dirname "$0")/lib.sh"
command -v chromium >/dev/null || fail "chromium is not installed (deploy/install-deps.sh)"
c_tasks
start_coordinator
start_worker w1 0
start_worker w2 0
submit_wait rep1 240
"$CR" report rep1 --out "$T/report.html" --wait-s 60 2>"$T/report.log" || fail "crucible report failed"
grep -q '<svg id="plot-status"' "$T/report.html" || fail "no status plot in the report"
for id in plot-status plot-flags plot-speedup plot-reward plot-throughput plot-busy plot-slowest plot-cache settings; do
    grep -q "id=\"$id\"" "$T/report.html" || fail "report lacks $id"
done
# self-contained: nothing fetched from anywhere
if grep -Eq '(src|href)=|<script|url\(' "$T/report.html"; then fail "report refers to an external asset"; fi
grep -q 'observe' "$T/report.html" || fail "the clock policy is not in the settings"
# chromium's own profile and cache in the temp folder; no sandbox as root in a container
HOME=$T timeout 90 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$T/chromium" --window-size=900,3000 --screenshot="$T/shot.png" \
    "file://$T/report.html" >"$T/chromium.log" 2>&1 || fail "chromium did not render the report"
[ -s "$T/shot.png" ] || fail "no screenshot"
[ -z "${SHOT:-}" ] || cp "$T/shot.png" "$SHOT"
python3 "$CR_SRC/tests/deploy/png_check.py" "$T/shot.png" || fail "the screenshot does not show the plots"
echo "report rendered and checked"
