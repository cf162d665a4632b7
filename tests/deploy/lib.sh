# lib.sh — helpers for the deploy tests (sourced; POSIX sh).
#
# Each test runs in its own temp folder ($T), starts the real `crucible`
# binary ($CR) as a coordinator and CPU workers on loopback (plaintext,
# --insecure: loopback only), and stops what it started by pid on exit.
# Every wait is bounded. A failure prints the logs and exits non-zero.
set -eu

CR_BIN=${CR_BIN:?CR_BIN: the build folder}
CR_SRC=${CR_SRC:?CR_SRC: the source folder}
CR=$CR_BIN/crucible
T=$(mktemp -d "${TMPDIR:-/tmp}/crucible-deploy.XXXXXX")
PIDS=""

cleanup() {
    rc=$?
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    for p in $PIDS; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null || true
    done
    if [ $rc -ne 0 ]; then
        for f in "$T"/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }; done
    fi
    [ -n "${KEEP:-}" ] || rm -rf "$T"
    exit $rc
}
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Copies a few C example tasks (statuses OK, INCORRECT, COMPILE_ERROR, ...) to $T/tasks.
c_tasks() {
    mkdir -p "$T/tasks"
    for t in ${1:-relu saxpy layernorm}; do cp -r "$CR_SRC/tasks/examples/$t" "$T/tasks/"; done
}

# Starts a coordinator with metrics on $MPORT_C; sets CRUCIBLE_* for clients.
start_coordinator() {
    PC=$(free_port); PW=$(free_port); MPORT_C=$(free_port)
    export CRUCIBLE_CLIENTS_ENDPOINT=tcp://127.0.0.1:$PC
    export CRUCIBLE_WORKERS_ENDPOINT=tcp://127.0.0.1:$PW
    export CRUCIBLE_INSECURE=1 CRUCIBLE_HEARTBEAT_MS=200 CRUCIBLE_LIVENESS=10
    "$CR" coordinator --db "$T/crucible.db" --metrics-addr "127.0.0.1:$MPORT_C" \
        >"$T/coordinator.log" 2>&1 &
    PIDS="$PIDS $!"
}

# Starts CPU worker $1 with metrics on port $2 (0 = none).
start_worker() {
    m=""
    [ "$2" = 0 ] || m="--metrics-addr=127.0.0.1:$2"
    "$CR" worker --worker-id "$1" --work-dir "$T/work-$1" --compile-jobs 1 $m \
        >"$T/worker-$1.log" 2>&1 &
    PIDS="$PIDS $!"
}

# Submits $T/tasks as batch $1 and waits (at most $2 s) until it is done.
submit_wait() {
    "$CR" submit "$T/tasks" --batch "$1" --follow --wait-s "$2" --time-budget-s 0.05 \
        --rse-target 0.05 >"$T/submit.log" 2>&1 || fail "submit of batch $1 did not finish"
}

# Polls "$@" every 0.2 s until it succeeds, at most $WAIT_S (default 20) s.
wait_for() {
    i=0
    while ! "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -le $((${WAIT_S:-20} * 5)) ] || return 1
        sleep 0.2
    done
}
