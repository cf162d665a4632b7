#!/bin/sh
# deploy/prometheus/crucible-alerts.yml: promtool check rules, then promtool
# test rules on series that must (and must not) fire; a broken copy must fail.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool is not installed (prometheus package)"
cp "$CR_SRC/deploy/prometheus/crucible-alerts.yml" "$CR_SRC/tests/deploy/alerts_test.yml" "$T/"
promtool check rules "$T/crucible-alerts.yml" || fail "promtool check rules"
(cd "$T" && promtool test rules alerts_test.yml) || fail "promtool test rules"
sed 's/(rate(crucible_jobs_total\[10m\])) == 0/(rate(crucible_jobs_total[10m] == 0/' "$T/crucible-alerts.yml" >"$T/broken.yml"
if promtool check rules "$T/broken.yml" >/dev/null 2>&1; then fail "a broken rule was accepted"; fi
echo "alert rules checked"
