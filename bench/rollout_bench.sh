#!/bin/sh
# rollout_bench.sh — the rollout driver's own cost against tests/fake_openai.py,
# the judge excluded (--no-judge): requests per second and driver CPU per turn.
# usage: bench/rollout_bench.sh [BUILD_DIR] [SAMPLES] [CONCURRENCY] [STREAM 0|1]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "${1:-$SRC/build}" && pwd)/crucible
SAMPLES=${2:-64}
CONC=${3:-16}
STREAM=${4:-0}
TMP=$(mktemp -d)
trap 'kill $FAKE 2>/dev/null; rm -rf "$TMP"' EXIT
python3 "$SRC/tests/fake_openai.py" --port 0 > "$TMP/port" &
FAKE=$!
while ! grep -q listening "$TMP/port" 2>/dev/null; do sleep 0.1; done
PORT=$(sed 's/listening on //' "$TMP/port")
S=""
[ "$STREAM" = 1 ] && S="--stream"
cd "$TMP"
python3 - "$BIN" "$SRC/tasks/examples" "$PORT" "$SAMPLES" "$CONC" "$S" <<'PY'
import resource, subprocess, sys, time, json
bin_, tasks, port, samples, conc, s = sys.argv[1:7]
args = [bin_, "rollout", tasks, "--no-judge", "--endpoints=http://127.0.0.1:%s/v1" % port,
        "--samples=%s" % samples, "--turns=3", "--concurrency=%s" % conc, "--out=b.jsonl",
        "--sample-mode=n", "--log-level=warn"] + ([s] if s else [])
t0 = time.monotonic()
p = subprocess.run(args, stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
turns = sum(len(json.loads(l)["turns"]) for l in open("b.jsonl"))
reqs = [l for l in p.stderr.splitlines() if l.startswith("requests:")][0]
answered = int(reqs.split()[1])
print("samples %s x 8 tasks, 3 turns, concurrency %s%s: %d turns, %d requests in %.2f s: "
      "%.0f requests/s, %.0f turns/s; driver CPU %.1f s = %.0f us per turn" %
      (samples, conc, " (streaming)" if s else "", turns, answered, wall, answered / wall,
       turns / wall, cpu, cpu / turns * 1e6))
PY
