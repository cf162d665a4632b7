#!/bin/sh
# tests/gpu/nccl.sh — the multi-GPU examples (docs/multigpu.md) on the GPUs of this machine:
# every candidate of tasks/examples/{allreduce_sum_f32,allreduce_sum_bf16,reduce_scatter_f32,
# tp_matmul} judged on one rank (the task copied with "gpus": 1), and on two when two GPUs are
# visible, each against its candidates/expected.json (expected-1gpu.json overrides for one
# rank); then ten fresh evaluations of each fast candidate: the speedup over the NCCL baseline
# and the spread of its median. Never changes a GPU setting.
#
#   sh tests/gpu/nccl.sh check|spread BIN OUT
#       check    every candidate against expected.json, one rank then two (~45 judge runs)
#       spread   ten fresh evaluations of each fast candidate on the most GPUs here
#       BIN holds cr_cuda_judge_driver (tests/gpu/call.sh passes .device/bin); OUT gets
#       summary lines appended to OUT/summary.log, the records to OUT/nccl/*.jsonl
# Objects are built first, all in parallel, once for both world sizes (the shim does not
# depend on "gpus"), in $CR_GPU_WORK/nccl (default /tmp/cr_gpu_work/nccl).
# Environment: CR_NCCL_ONLY (task names to run alone), CR_NCCL_RUNS (fresh evaluations of
# each fast candidate, default 10), CR_NCCL_BUDGET (s of timing per case, default 0.5 for
# check, 1 for spread).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
mode=$1
bin=$2
out=$3
L=$out/summary.log
o=$out/nccl
mkdir -p "$o"
work=${CR_GPU_WORK:-/tmp/cr_gpu_work}/nccl
runs=${CR_NCCL_RUNS:-10}
if [ "$mode" = spread ]; then budget=${CR_NCCL_BUDGET:-1}; else budget=${CR_NCCL_BUDGET:-0.5}; fi
drv=$bin/cr_cuda_judge_driver
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
echo "  GPUs visible: $ngpu; NCCL $(ls /usr/local/cuda/lib64/libnccl.so.* 2> /dev/null | head -n 1)" >> "$L"
tasks="allreduce_sum_f32 allreduce_sum_bf16 reduce_scatter_f32 tp_matmul"
[ -n "${CR_NCCL_ONLY:-}" ] && tasks=$CR_NCCL_ONLY
worlds=1
[ "$ngpu" -ge 2 ] && worlds="1 2"

# The record's status, speedup, median, flags and message, as one line.
summarise() {
    python3 tests/gpu/nccl_records.py line
}

# expected status of candidate $2 of task dir $1 for world $3
expected() {
    python3 - "$1" "$2" "$3" << 'PY'
import json, os, sys
d, c, w = sys.argv[1], sys.argv[2], sys.argv[3]
e = json.load(open(os.path.join(d, "candidates", "expected.json")))
o = os.path.join(d, "candidates", "expected-1gpu.json")
if w == "1" and os.path.exists(o):
    e.update(json.load(open(o)))
print(e.get(c, "?"))
PY
}

# every object, in parallel: the task's reference and baseline with each candidate
for t in $tasks; do
    src=$root/tasks/examples/$t
    for c in "$src"/candidates/*.cu; do
        b=$(basename "$c" .cu)
        ( "$drv" --build-only --work "$work/$t/$b" --task-work "$work/$t/_task" "$src" "$c"               > /dev/null 2>> "$o/build.log" || echo "  build failed: $t $b" >> "$L" ) &
        [ "$b" = fast ] && wait # the reference and baseline once, before the rest share them
    done
done
wait

# the task at world size $2 in $o/w$2/$1
world_copy() {
    td=$o/w$2/$1
    rm -rf "$td"
    mkdir -p "$(dirname "$td")"
    cp -r "$root/tasks/examples/$1" "$td"
    sed -i "s/\"gpus\": [0-9]*/\"gpus\": $2/" "$td/task.json"
}

pass=0
fail=0
[ "$mode" = check ] && for w in $worlds; do
    for t in $tasks; do
        src=$root/tasks/examples/$t
        world_copy "$t" "$w"
        td=$o/w$w/$t
        for c in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' \
                   "$src/candidates/expected.json"); do
            want=$(expected "$src" "$c" "$w")
            tmo=60
            [ "$c" = hang_rank.cu ] && tmo=20 # its TIMEOUT comes at 90% of this, less 0.5 s
            timeout $((tmo + 60)) "$drv" --budget "$budget" --timeout "$tmo" \
                --work "$work/$t/${c%.cu}" --task-work "$work/$t/_task" \
                "$td" "$td/candidates/$c" > "$o/w$w.$t.${c%.cu}.jsonl" 2> "$o/w$w.$t.${c%.cu}.log"
            got=$(summarise < "$o/w$w.$t.${c%.cu}.jsonl")
            st=${got%% *}
            if [ "$st" = "$want" ]; then
                pass=$((pass + 1))
                echo "  pass gpus=$w $t $c: $got" >> "$L"
            else
                fail=$((fail + 1))
                echo "  FAIL gpus=$w $t $c: expected $want, got ${got:-no record (exit; see nccl/w$w.$t.${c%.cu}.log)}" >> "$L"
                tail -n 5 "$o/w$w.$t.${c%.cu}.log" | cut -c1-300 | sed 's/^/      /' >> "$L"
            fi
        done
    done
done
[ "$mode" = check ] && echo "  nccl examples: $pass as expected, $fail not" >> "$L"
[ "$mode" = spread ] || exit 0

# Ten fresh evaluations (a process each) of every fast candidate on the most GPUs here.
w=${worlds##* }
for t in $tasks; do
    world_copy "$t" "$w"
    td=$o/w$w/$t
    : > "$o/spread.$t.jsonl"
    i=0
    while [ $i -lt "$runs" ]; do
        timeout 180 "$drv" --budget "$budget" --timeout 120 --work "$work/$t/fast" \
            --task-work "$work/$t/_task" "$td" "$td/candidates/fast.cu" \
            >> "$o/spread.$t.jsonl" 2>> "$o/spread.$t.log"
        i=$((i + 1))
    done
    python3 tests/gpu/nccl_records.py spread "$o/spread.$t.jsonl" "$t" "$w" >> "$L"
done
