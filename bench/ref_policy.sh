#!/usr/bin/env bash
# bench/ref_policy.sh — CPU throughput of the two reference timing policies.
#
# A GRPO-like batch (SAMPLES samples of each task's fast candidate, one group
# per task) goes through `crucible run` (a local coordinator and WORKERS
# workers) once with --ref-policy interleaved and once with cached. Prints,
# for each, the wall time, candidates per minute, the judge's own seconds
# (verify + profile, summed over records) and how many records reused a
# cached reference, then the throughput ratio cached / interleaved.
#
#   bench/ref_policy.sh                       # build/crucible, 8 samples, 2 workers
#   CRUCIBLE=build-x/crucible SAMPLES=16 WORKERS=1 bench/ref_policy.sh
#
# Each run has its own work dir (crucible run makes one), so neither finds
# the other's compile cache or reference cache. Extra arguments go to both
# runs (e.g. --time-budget-s 0.5).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CRUCIBLE=${CRUCIBLE:-$ROOT/build/crucible}
SAMPLES=${SAMPLES:-8}
WORKERS=${WORKERS:-2}
TASKS=${TASKS:-"matmul softmax_rows"}

[ -x "$CRUCIBLE" ] || { echo "ref_policy.sh: $CRUCIBLE not built (set CRUCIBLE=)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "ref_policy.sh: python3 is needed to summarise" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cr-refbench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Only the batch's tasks: a folder of task folders.
mkdir -p "$tmp/tasks"
for t in $TASKS; do
    cp -r "$ROOT/tasks/examples/$t" "$tmp/tasks/$t"
done
# The manifest: SAMPLES samples of the fast candidate per task, grouped.
for t in $TASKS; do
    for ((i = 0; i < SAMPLES; i++)); do
        printf '{"task": "%s", "file": "%s", "job_id": "%s-%d", "group_id": "%s", "sample_index": %d}\n' \
            "$t" "$tmp/tasks/$t/candidates/fast.c" "$t" "$i" "$t" "$i"
    done
done >"$tmp/batch.jsonl"
n=$(wc -l <"$tmp/batch.jsonl")

echo "ref_policy.sh: $n candidates ($TASKS; $SAMPLES samples each), $WORKERS workers," \
    "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

declare -A rate
for policy in interleaved cached; do
    t0=$(date +%s.%N)
    if ! "$CRUCIBLE" run "$tmp/tasks" "$tmp/batch.jsonl" --workers "$WORKERS" \
        --ref-policy "$policy" --out "$tmp/$policy.jsonl" --log-level warn "$@" \
        >"$tmp/$policy.txt" 2>&1; then
        echo "ref_policy.sh: crucible run --ref-policy $policy failed:" >&2
        tail -20 "$tmp/$policy.txt" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    python3 - "$tmp/$policy.jsonl" "$t0" "$t1" "$policy" "$tmp/$policy.rate" <<'EOF'
import json, sys
path, t0, t1, policy, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
recs = [json.loads(l) for l in open(path) if l.strip()]
wall = t1 - t0
ok = sum(r.get("status") == "OK" for r in recs)
judge = sum((r.get("verify") or {}).get("seconds", 0) + (r.get("profile") or {}).get("seconds", 0)
            for r in recs)
reused = sum((r.get("profile") or {}).get("ref_policy") == "cached" for r in recs)
per_min = len(recs) / wall * 60
print(f"{policy:12s} wall {wall:6.1f} s  {per_min:6.1f} candidates/min  judge {judge:6.1f} s"
      f"  OK {ok}/{len(recs)}  reference reused {reused}")
open(out, "w").write(f"{per_min:.3f}\n")
EOF
    rate[$policy]=$(cat "$tmp/$policy.rate")
done
python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(f'cached / interleaved throughput: {b / a:.2f}x')" \
    "${rate[interleaved]}" "${rate[cached]}"
