#!/usr/bin/env bash
# bench/chaos.sh — lose nothing under faults, at scale.
#
# A coordinator and WORKERS workers (separate `crucible` processes, TCP on
# 127.0.0.1, free ports) judge JOBS cheap C candidates (correct / wrong / not
# compiling, 0.01 s timing budget) while this script kills a random worker or
# the coordinator with SIGKILL every 0.5–1.5 s and starts it again 0–1 s later
# (the coordinator on the same database and endpoints; a worker under its old
# id or, half the time, as a new one). `crucible submit` and then
# `crucible results` are the clients: they must reconnect by themselves.
#
# The coordinator runs with --drain-after=0: killing workers on purpose is
# not a reason to take them out of service.
#
# At the end it checks, and prints: every job has exactly one record in the
# database (seqs 1..N) and in the client's output, each with the verdict its
# candidate deserves. Exit 0 only when nothing was lost or duplicated.
#
#   bench/chaos.sh                               # build/crucible, 2000 jobs, 4 workers
#   CRUCIBLE=build-x/crucible JOBS=500 WORKERS=2 bench/chaos.sh
#
# Bounded: after LIMIT_S seconds (default 1200) it stops everything and fails.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CRUCIBLE=${CRUCIBLE:-$ROOT/build/crucible}
JOBS=${JOBS:-2000}
WORKERS=${WORKERS:-4}
LIMIT_S=${LIMIT_S:-1200}
HB=(--heartbeat-ms=200 --liveness=5)

[ -x "$CRUCIBLE" ] || { echo "chaos.sh: $CRUCIBLE not built (set CRUCIBLE=)" >&2; exit 2; }
for t in python3 sqlite3; do
    command -v $t >/dev/null || { echo "chaos.sh: $t is needed" >&2; exit 2; }
done
CRUCIBLE=$(cd "$(dirname "$CRUCIBLE")" && pwd)/$(basename "$CRUCIBLE")
export CRUCIBLE_INSECURE=1 # plain TCP on 127.0.0.1 for every process below

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cr-chaos-XXXXXX")
declare -A pid=()        # name -> pid ("coord", "w0".."wN")
declare -A wid=()        # worker slot -> its current worker id
declare -A back_at=()    # name -> epoch ms to start it again
client=""                # pid of the running client command
cleanup() {
    for n in "${!pid[@]}"; do
        [ -n "${pid[$n]}" ] && kill -KILL -- "-${pid[$n]}" "${pid[$n]}" 2>/dev/null || true
    done
    [ -n "$client" ] && kill -KILL "$client" 2>/dev/null || true
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] && echo "chaos.sh: kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
# running and not a zombie (an ended child stays one until `wait`)
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
pc=$(free_port)
pw=$(free_port)
while [ "$pw" = "$pc" ]; do pw=$(free_port); done
CEP=tcp://127.0.0.1:$pc
WEP=tcp://127.0.0.1:$pw

# ---- the task and the jobs ----
mkdir -p "$tmp/task"
ok='void solve(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }'
wrong='void solve(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = x[i]; }'
broken='void solve(const float *x, float *y, int n) { y[0] = }'
echo "$ok" >"$tmp/task/reference.c"
cat >"$tmp/task/task.json" <<'EOF'
{"name": "chaos", "language": "c",
 "signature": "void solve(const float *x, float *y, int n)",
 "params": {"x": {"role": "in", "dtype": "float32", "shape": ["n"]},
            "y": {"role": "out", "dtype": "float32", "shape": ["n"]},
            "n": {"role": "size"}},
 "cases": [{"n": 7}, {"n": 1000}], "bench_cases": [1],
 "tolerance": {"atol": 0, "rtol": 0}, "reference": "reference.c"}
EOF
# job j<i>: i % 3 = 0 correct, 1 wrong, 2 not compiling; ten textual variants
for ((i = 0; i < JOBS; i++)); do
    case $((i % 3)) in 0) src=$ok ;; 1) src=$wrong ;; *) src=$broken ;; esac
    printf '{"task": "chaos", "job_id": "j%05d", "source": "/* variant %d */\\n%s\\n"}\n' \
        "$i" $((i % 10)) "$src"
done >"$tmp/jobs.jsonl"

# ---- the cluster ----
start() { # name
    local n=$1
    if [ "$n" = coord ]; then
        setsid "$CRUCIBLE" coordinator --clients-endpoint="$CEP" --workers-endpoint="$WEP" \
            --db="$tmp/crucible.db" --max-attempts=50 --drain-after=0 "${HB[@]}" \
            >>"$tmp/coordinator.log" 2>&1 &
    else
        local id=${wid[$n]}
        setsid "$CRUCIBLE" worker --workers-endpoint="$WEP" --worker-id="$id" \
            --work-dir="$tmp/work-$id" --compile-jobs=1 "${HB[@]}" >>"$tmp/worker-$id.log" 2>&1 &
    fi
    pid[$n]=$!
    back_at[$n]=""
}
kill_one() { # name
    local n=$1
    # the group (a worker's compilers too), and the process itself in case
    # it was started a moment ago and has not made its own group yet
    kill -KILL -- "-${pid[$n]}" 2>/dev/null || true
    kill -KILL "${pid[$n]}" 2>/dev/null || true
    wait "${pid[$n]}" 2>/dev/null || true
    pid[$n]=""
    back_at[$n]=$(($(now_ms) + RANDOM % 1000))
}

start coord
for ((k = 0; k < WORKERS; k++)); do
    wid[w$k]=w$k
    start w$k
done

kc=0 kw=0 newid=0 unexpected=0 gen=0
batch=chaos-$$-$RANDOM
t0=$(now_ms)
next=$((t0 + 500))
phase=submit
"$CRUCIBLE" submit "$tmp/task" "$tmp/jobs.jsonl" --clients-endpoint="$CEP" --batch="$batch" \
    --time-budget-s=0.01 --max-attempts=50 "${HB[@]}" --log-level=warn \
    >"$tmp/submit.out" 2>"$tmp/submit.err" &
client=$!
echo "chaos.sh: $JOBS jobs, $WORKERS workers, batch $batch, folder $tmp" >&2
while :; do
    now=$(now_ms)
    if ((now - t0 > LIMIT_S * 1000)); then
        echo "chaos.sh: not done after $LIMIT_S s: stopped" >&2
        phase=timeout
        break
    fi
    # the client: submit, then results until BatchDone
    if ! alive "$client"; then
        rc=0
        wait "$client" || rc=$?
        if [ "$phase" = submit ]; then
            [ $rc -eq 0 ] || { echo "chaos.sh: submit failed:" >&2; cat "$tmp/submit.err" >&2; exit 1; }
            phase=results
            "$CRUCIBLE" results "$batch" --clients-endpoint="$CEP" --out="$tmp/results.jsonl" \
                "${HB[@]}" --log-level=warn 2>"$tmp/results.err" &
            client=$!
        else
            client=""
            [ $rc -eq 0 ] || { echo "chaos.sh: results failed:" >&2; tail "$tmp/results.err" >&2; phase=failed; }
            break
        fi
    fi
    # children that ended without our kill are a bug: counted, started again
    for n in "${!pid[@]}"; do
        if [ -n "${pid[$n]}" ] && ! alive "${pid[$n]}"; then
            echo "chaos.sh: $n ended by itself" >&2
            unexpected=$((unexpected + 1))
            wait "${pid[$n]}" 2>/dev/null || true
            pid[$n]=""
            back_at[$n]=$now
        fi
    done
    for n in "${!back_at[@]}"; do
        if [ -n "${back_at[$n]}" ] && ((now >= back_at[$n])); then
            if [ "$n" != coord ] && ((RANDOM % 2)); then
                gen=$((gen + 1))
                wid[$n]=$n-g$gen # a replacement machine: new id, new work dir
                newid=$((newid + 1))
            fi
            start "$n"
        fi
    done
    if ((now >= next)); then
        next=$((now + 500 + RANDOM % 1000))
        if ((RANDOM % 3 == 0)); then
            [ -n "${pid[coord]}" ] && { kill_one coord; kc=$((kc + 1)); }
        else
            n=w$((RANDOM % WORKERS))
            [ -n "${pid[$n]}" ] && { kill_one "$n"; kw=$((kw + 1)); }
        fi
    fi
    sleep 0.1
done
wall=$((($(now_ms) - t0)))
reconnects=$(cat "$tmp/submit.err" "$tmp/results.err" 2>/dev/null | grep -c "reconnecting" || true)

# ---- the verdict: stop everything, then read the database and the output ----
for n in "${!pid[@]}"; do
    [ -n "${pid[$n]}" ] && kill_one "$n"
done
wait 2>/dev/null || true
# a job is DONE when the records table holds its record (coordinator/store.c, "Records")
db=$(sqlite3 "$tmp/crucible.db" "SELECT count(*), count(r.job), count(DISTINCT r.seq), \
    ifnull(min(r.seq), 0), ifnull(max(r.seq), 0), sum(r.record IS NOT NULL), \
    ifnull(max(j.attempt), 0), sum(j.attempt > 1) FROM jobs j LEFT JOIN records r \
    ON r.job = j.rowid WHERE j.batch_id = '$batch'")
touch "$tmp/results.jsonl"
python3 - "$JOBS" "$WORKERS" "$kc" "$kw" "$newid" "$unexpected" "$reconnects" "$wall" "$db" \
    "$tmp/results.jsonl" "$phase" <<'EOF'
import collections, json, sys
jobs, workers, kc, kw, newid, unexpected, reconnects, wall = map(int, sys.argv[1:9])
rows, done, dseq, smin, smax, recs, maxatt, retried = (int(x or 0) for x in sys.argv[9].split("|"))
seen, status = collections.Counter(), {}
for line in open(sys.argv[10]):
    r = json.loads(line)
    seen[r["job_id"]] += 1
    status.setdefault(r["job_id"], r["status"])
want = {0: "OK", 1: "INCORRECT", 2: "COMPILE_ERROR"}
ids = ["j%05d" % i for i in range(jobs)]
lost = sum(1 for j in ids if seen[j] == 0)
dup = sum(1 for j in ids if seen[j] > 1)
wrong = sum(1 for i, j in enumerate(ids) if j in status and status[j] != want[i % 3])
db_lost = jobs - done
db_dup = recs - dseq if recs > dseq else 0
gap = not (done == 0 or (smin == 1 and smax == done and dseq == done))
print(f"jobs {jobs}, workers {workers}, wall {wall / 1000:.1f} s ({jobs * 60000 / max(wall, 1):.0f} jobs/min)")
print(f"kills: coordinator {kc}, worker {kw} ({newid} came back under a new id); "
      f"client reconnects {reconnects}; unexpected exits {unexpected}")
print(f"database: {done}/{rows} jobs DONE, seqs {smin}..{smax} ({dseq} distinct), "
      f"{retried} jobs needed more than one attempt (max {maxatt})")
print(f"records lost: {lost} at the client, {db_lost} in the database")
print(f"records duplicated: {dup} at the client, {db_dup} in the database")
print(f"wrong verdicts: {wrong}; seq gaps: {'yes' if gap else 'none'}; end: {sys.argv[11]}")
bad = lost or dup or db_lost or db_dup or wrong or gap or unexpected or sys.argv[11] != "results"
sys.exit(1 if bad else 0)
EOF
