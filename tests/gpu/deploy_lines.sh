#!/bin/bash
# tests/gpu/deploy_lines.sh — on a GPU machine: the CUDA examples judged by a
# worker started with each deployment's own command line, against a real
# coordinator, and every status compared with candidates/expected.json:
#
#   systemd  deploy/systemd/crucible-worker@.service's ExecStart, instance 0
#   slurm    deploy/slurm/crucible.sbatch's worker line, as srun would run it
#            for task 0 (SLURM_* set as srun sets them for one GPU)
#   gpus     `crucible worker --gpus all`
#
# Clock policy observe (the default): nothing on the GPU is changed.
#   sh tests/gpu/deploy_lines.sh BIN_DIR OUT_DIR
set -u
cd "$(dirname "$0")/../.."
root=$PWD
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
mkdir -p "$out"
# CR_DEPLOY_LANG=c tries the plumbing on a machine without a GPU
lang=${CR_DEPLOY_LANG:-cuda}
export PATH="$bin:$PATH:/usr/local/cuda/bin" CRUCIBLE_INSECURE=1 CRUCIBLE_BACKENDS=$lang
tmp=$(mktemp -d)
tasks="$tmp/tasks"
mkdir -p "$tasks"
for t in "$root"/tasks/examples/*/; do
    t=${t%/}
    case "$(basename "$t")" in *_cuda) [ "$lang" = cuda ] ;; *) [ "$lang" = c ] ;; esac &&
        ln -s "$t" "$tasks/$(basename "$t")"
done
fail=0

# ExecStart= of the unit, with %i, %H and the binary's path filled in
unit_line() {
    sed -n 's/^ExecStart=//p' "$root/deploy/systemd/crucible-worker@.service" |
        sed -e "s/%i/0/g" -e "s/%H/$(hostname -s)/g" -e "s|/usr/local/bin/crucible|$bin/crucible|"
}

one() { # name, then the worker's command line
    name=$1
    shift
    db="$tmp/$name.db"
    cport=$((17000 + RANDOM % 1000))
    wport=$((cport + 1000))
    crucible coordinator --db "$db" --clients-endpoint "tcp://127.0.0.1:$cport" \
        --workers-endpoint "tcp://127.0.0.1:$wport" > "$out/$name-coordinator.log" 2>&1 &
    cpid=$!
    export CRUCIBLE_WORKERS_ENDPOINT="tcp://127.0.0.1:$wport"
    export CRUCIBLE_CLIENTS_ENDPOINT="tcp://127.0.0.1:$cport"
    echo "$name: $*" > "$out/$name-worker.log"
    "$@" >> "$out/$name-worker.log" 2>&1 &
    wpid=$!
    crucible submit "$tasks" --batch "$name" --time-budget-s 0.3 > "$out/$name-submit.log" 2>&1
    timeout 300 crucible results "$name" --format jsonl > "$out/$name.jsonl" 2> "$out/$name-results.log" &
    rpid=$!
    # a worker that died leaves nothing to wait for
    while kill -0 "$rpid" 2>/dev/null; do
        kill -0 "$wpid" 2>/dev/null || { sleep 2; kill "$rpid" 2>/dev/null; break; }
        sleep 1
    done
    wait "$rpid" 2>/dev/null
    kill "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    kill "$cpid" 2>/dev/null
    wait "$cpid" 2>/dev/null
    python3 - "$root" "$name" "$out/$name.jsonl" "$lang" <<'EOF' >> "$out/summary.txt"
import json, os, sys
root, name, path, lang = sys.argv[1:]
recs = [json.loads(l) for l in open(path) if l.strip()]
want = {}
for t in sorted(os.listdir(os.path.join(root, "tasks/examples"))):
    exp = os.path.join(root, "tasks/examples", t, "candidates/expected.json")
    if t.endswith("_cuda") == (lang == "cuda") and os.path.exists(exp):
        for c, st in json.load(open(exp)).items():
            want["%s/%s" % (t, c)] = st
got = {"%s/%s" % (r["task"], r["job_id"].split("/")[-1]): r["status"] for r in recs}
bad = [(k, got.get(k), v) for k, v in sorted(want.items()) if got.get(k) != v]
print("%s: %d of %d records, %d as expected%s" % (name, len(got), len(want), len(want) - len(bad),
      "".join("\n  %s: got %s, expected %s" % b for b in bad)))
sys.exit(1 if bad else 0)
EOF
    [ $? -eq 0 ] || fail=1
}

# shellcheck disable=SC2046
one systemd $(unit_line)
SLURM_STEP_GPUS=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_JOB_ID=1 \
    one slurm bash -c "$(sed -n "/^    bash -c 'exec/,/\"\$@\"'/p" "$root/deploy/slurm/crucible.sbatch" |
        sed -e "s/^    bash -c '//" -e "s/' *\\\\\$//" -e "s/'\"\$ADDR:\$WPORT\"'/127.0.0.1:\${CRUCIBLE_WORKERS_ENDPOINT##*:}/" \
            -e "s/'\"\$WMBASE\"'/9700/")" "$bin/crucible"
one gpus crucible worker --gpus all --work-dir "$tmp/gpus-work"
cat "$out/summary.txt"
rm -rf "$tmp"
exit $fail
