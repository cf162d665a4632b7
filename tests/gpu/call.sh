#!/bin/sh
# tests/gpu/call.sh — one device call's worth of GPU checks, each bounded in time, their
# summaries in one file ($OUT/summary.log: only a few files come back from the device
# tool, so the bulky logs are cut down or removed at the end). Never changes a GPU setting.
#
#   build here:  cmake -S . -B build && cmake --build build -j2
#                ../shared/tools/device-pack -o .device build/crucible build/crucible-runner \
#                    build/crucible-executor build/crucible-executor-cuda \
#                    build/cr_cuda_judge_driver build/test_hacks build/libcrucible-pysandbox.so
#                cp build/crucible-torch .device/bin/     (a script: device-pack stops at it)
#                [optional: .device-old/, another commit's pack, for the grpo comparison]
#   there:       sh tests/gpu/call.sh PART...      (run tool: carry [".device"(, ".device-old")])
#
# Parts (seconds are what each took on the H200 in session 15):
#   grpo        the 64-candidate batch through the serving judge at --log-level debug, its
#               timeline (bench/serve_timeline.py), and .device-old's in the same call (~100 s)
#   precision   ten fresh evaluations of the fast vector_add (~60 s)
#   seq         the sequential script on 16 of the 64 (~45 s): the batch's ratio
#   hacks       the CUDA hack suite (~200 s)
#   redteam     the CUDA red-team suite (~30 s)
#   torch-ex    every torch example whose name has $CR_TORCH_ONLY (default "l1_"), then
#               do_bench against the honest GPU ones (~150 s)
#   nccl        the multi-GPU examples (tests/gpu/nccl.sh check, docs/multigpu.md): every
#               candidate on one rank, and on two ranks when two GPUs are visible, against
#               expected.json (not yet timed on a GPU)
#   nccl-spread ten fresh evaluations of each fast one on the most GPUs visible: speedup
#               over the NCCL baseline and spread (tests/gpu/nccl.sh spread)
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/cr_gpu_call}
mkdir -p "$out"
L=$out/summary.log
export LD_LIBRARY_PATH="$PWD/.device/lib:/usr/local/cuda/lib64" PATH="$PATH:/usr/local/cuda/bin"
bin=$PWD/.device/bin
B="python3 bench/gpu_bench.py --policies interleaved --budget 1.0"
hacks() { # $1 the suite's folder ("" = tests/hacks), $2 a timeout
    CR_HACKS_DIR=$1 CR_TEST_BIN_DIR=$bin CR_TEST_SOURCE_DIR=$PWD CR_HACKS_LANG=cuda \
        CRUCIBLE_BACKENDS=cuda CR_HACKS_WORKERS=1 CRUCIBLE_TIME_BUDGET_S=0.3 timeout "$2" \
        "$bin/test_hacks" > "$out/hacks.txt" 2>&1
    echo "  exit $?" >> "$L"
    grep "candidates (\|status .*expected" "$out/hacks.txt" | cut -c1-300 | tail -12 >> "$L"
}
for part in "$@"; do
    echo "=== $part ($(date +%T))" >> "$L"
    case $part in
    grpo)
        timeout 100 $B --bin "$bin" --out "$out/serve" --parts grpo --log-level debug > /dev/null 2>&1
        grep -i "evals/min" "$out/serve/bench.log" | sed 's/^/  serving: /' >> "$L"
        python3 bench/serve_timeline.py "$out/serve/logs_interleaved/worker-w0.log" >> "$L" 2>&1
        if [ -d .device-old ]; then
            LD_LIBRARY_PATH="$PWD/.device-old/lib:/usr/local/cuda/lib64" timeout 90 \
                $B --bin .device-old/bin --out "$out/old" --parts grpo > /dev/null 2>&1
            grep -i "evals/min" "$out/old/bench.log" | sed 's/^/  .device-old: /' >> "$L"
        fi
        rm -rf "$out/serve" "$out/old" ;;
    precision)
        timeout 120 $B --bin "$bin" --out "$out/prec" --parts precision > /dev/null 2>&1
        grep -A24 "precision" "$out/prec/bench.log" | grep "median_us\|statuses" | grep -v "raw\|ref_" >> "$L"
        rm -rf "$out/prec" ;;
    seq)
        timeout 120 $B --bin "$bin" --out "$out/seq" --parts seq --seq-count 16 > /dev/null 2>&1
        grep -i "evals/min" "$out/seq/bench.log" | sed 's/^/  /' >> "$L"
        rm -rf "$out/seq" ;;
    hacks) hacks "" 240 ;;
    redteam)
        sh tests/redteam/src/make.sh /tmp/cr-rt > /dev/null 2>&1
        hacks /tmp/cr-rt 120 ;;
    torch-ex)
        timeout 20 sh tests/gpu/torch_check.sh "$out/t" env > /dev/null 2>&1
        grep "RESULT" "$out/t/summary.txt" >> "$L"
        py=/usr/bin/python3
        for c in /opt/torch/.venv/bin/python3 /usr/bin/python3 python3; do
            "$c" -I -c 'import torch' 2> /dev/null && py=$c && break
        done
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1)
        CR_TORCH_TRACE=1 CUDA_TORCH_ARCH_LIST=${cap:-9.0} timeout 200 "$py" \
            tests/torch/check_examples.py --crucible "$bin/crucible" --needs all --workers 1 \
            --only "${CR_TORCH_ONLY:-l1_}" --logs "$out/t/ex" --extra=--time-budget-s=1 \
            --extra=--rse-target=0.01 --extra=--log-level=debug > "$out/t/check.txt" 2>&1
        grep "^FAIL\|as expected" "$out/t/check.txt" | cut -c1-300 >> "$L"
        # where a GPU RUN's host time goes (crucible_torch.py's CR_TORCH_TRACE lines)
        python3 - "$out/t/ex/logs/worker-w0.log" >> "$L" 2>&1 <<'PY'
import re, sys, statistics
pat = re.compile(r"crucible-torch: (\w+) RUN host us: record ([0-9.]+), forward ([0-9.]+), "
                 r"record ([0-9.]+), synchronise ([0-9.]+); events ([0-9.]+)")
by = {}
for line in open(sys.argv[1], errors="replace"):
    m = pat.search(line)
    if m:
        by.setdefault(m.group(1), []).append([float(g) for g in m.groups()[1:]])
for role, rows in sorted(by.items()):
    med = [statistics.median(c) for c in zip(*rows)]
    print("  %s RUNs %d, host us medians: record %.1f, forward %.1f, record %.1f, "
          "synchronise %.1f; events %.1f" % (role, len(rows), *med))
PY
        timeout 150 "$py" tests/gpu/torch_dobench.py --results "$out/t/ex/results.jsonl" \
            --src "$PWD" --python "$py" > "$out/t/dobench.txt" 2>&1
        tail -12 "$out/t/dobench.txt" | sed 's/^/  /' >> "$L"
        rm -rf "$out/t/ex/logs" ;;
    nccl)
        timeout 580 sh tests/gpu/nccl.sh check "$bin" "$out" ;;
    nccl-spread)
        timeout 580 sh tests/gpu/nccl.sh spread "$bin" "$out" ;;
    *) echo "  unknown part" >> "$L" ;;
    esac
done
cat "$L"
