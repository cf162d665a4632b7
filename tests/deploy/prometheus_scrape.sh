#!/bin/sh
# Metrics scraped by a real Prometheus (Debian's prometheus): a coordinator
# and a CPU worker serve GET /metrics, Prometheus scrapes both every 500 ms
# (config written here, its TSDB in the temp folder, bound to 127.0.0.1), a
# batch runs, and values are read back through Prometheus' HTTP query API:
# the coordinator's per-status job counts must add up to the batch, the
# worker's must too, and both targets must be up.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (deploy/install-deps.sh)"
c_tasks "relu saxpy"
start_coordinator
MPORT_W=$(free_port)
start_worker w1 "$MPORT_W"
PPORT=$(free_port)
cat >"$T/prometheus.yml" <<CFG
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: crucible-coordinator
    static_configs: [{targets: ["127.0.0.1:$MPORT_C"]}]
  - job_name: crucible-worker
    static_configs: [{targets: ["127.0.0.1:$MPORT_W"]}]
CFG
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
PIDS="$PIDS $!"
# our endpoints answer directly first
wait_for python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$MPORT_C/metrics', timeout=2)" \
    || fail "coordinator metrics do not answer"
wait_for python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$MPORT_W/healthz', timeout=2)" \
    || fail "worker healthz does not answer"
submit_wait prom1 240
N=$(find "$T/tasks" -path '*/candidates/*' \( -name '*.c' \) | wc -l)
query() { # query EXPR WANT: polls until the query's first value equals WANT (30 s)
    python3 - "$PPORT" "$1" "$2" <<'PY'
import json, sys, time, urllib.parse, urllib.request
port, expr, want = sys.argv[1], sys.argv[2], float(sys.argv[3])
got = None
for _ in range(150):
    try:
        q = urllib.parse.urlencode({"query": expr})
        r = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/query?%s" % (port, q), timeout=2))
        res = r["data"]["result"]
        if res:
            got = float(res[0]["value"][1])
            if got == want:
                print("prometheus: %s = %g" % (expr, got))
                sys.exit(0)
    except Exception as e:  # not up yet
        got = repr(e)
    time.sleep(0.2)
print("prometheus: %s = %s, wanted %g" % (expr, got, want))
sys.exit(1)
PY
}
query 'sum(up{job=~"crucible-.*"})' 2 || fail "both targets up"
query 'sum(crucible_jobs_total)' "$N" || fail "coordinator job count"
query 'sum(crucible_worker_jobs_total{worker="w1"})' "$N" || fail "worker job count"
query 'crucible_queue_depth' 0 || fail "queue depth"
query 'sum(crucible_workers{state="ready"})' 1 || fail "worker state"
query 'count(crucible_worker_stage_seconds_bucket{stage="compile",le="+Inf"})' 1 || fail "stage histogram"
query 'sum(crucible_assign_to_result_seconds_count)' "$N" || fail "latency histogram"
echo "prometheus scraped and queried"
