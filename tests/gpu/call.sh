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
#   grpo-settings  the same batch under each serving setting of $CR_SERVE_SETTINGS (default
#               "1,1 1,8 3,1 3,8": S,K = CRUCIBLE_SERVE_SPARES, CRUCIBLE_SERVE_KEPT_REFS,
#               docs/judge.md §6; 1,1 is session 14's design), each with its timeline and at
#               most 100 s, then .device-old's once (~60 s a setting; keep 4 settings + old
#               within the run tool's 600 s)
#   precision-settings  the precision part under each setting of $CR_SERVE_SETTINGS (~60 s each)
#   precision   ten fresh evaluations of the fast vector_add (~60 s)
#   seq         the sequential script on 16 of the 64 (~45 s): the batch's ratio
#   dobench-cuda  tests/gpu/run.sh quick: the fast CUDA examples against do_bench, and
#               ten fresh runs of the precision task through the judge driver
#   hacks       the CUDA hack suite (~200 s)
#   redteam     the CUDA red-team suite (~30 s)
#   torch-ex    every torch example whose name has one of $CR_TORCH_ONLY's comma-separated
#               substrings (default "l1_"; torch-ex:SUBSTRINGS names them in the part, its
#               logs in their own folder, so one call can run several sets; $CR_TORCH_TIMEOUT, default 200 s, bounds them), then
#               do_bench against the honest GPU ones (their extensions built 8 at a time
#               first, $CR_DOBENCH_PREBUILD at a time; at most $CR_DOBENCH_TIMEOUT s, 240;
#               CR_TORCH_DOBENCH=0 skips it); $CR_TORCH_RSE is the jobs' --rse-target (0.01)
#   torch-hacks-gpu  the torch hack suite's GPU rows (tests/hacks/torch-gpu), after torch-ex
#   torch-bench $CR_BENCH_N (64) KernelBench-format candidates through one worker against the
#               first $CR_BENCH_SEQ_N (2) one after another, KernelBench's way: evals/min, ratio
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
    grpo-settings)
        for sk in ${CR_SERVE_SETTINGS:-1,1 1,8 3,1 3,8}; do
            sp=${sk%,*} kr=${sk#*,}
            d=$out/serve-s$sp-k$kr
            echo "  --- spares $sp, kept references $kr ($(date +%T))" >> "$L"
            timeout 100 $B --bin "$bin" --out "$d" --parts grpo --log-level debug \
                --env CRUCIBLE_SERVE_SPARES=$sp --env CRUCIBLE_SERVE_KEPT_REFS=$kr \
                > /dev/null 2>&1
            echo "  exit $?" >> "$L"
            grep -i "evals/min" "$d/bench.log" | sed 's/^/  serving: /' >> "$L"
            grep -h "serve: up to" "$d/logs_interleaved/worker-w0.log" | head -n 1 | cut -c1-200 \
                | sed 's/^/  /' >> "$L"
            python3 bench/serve_timeline.py "$d/logs_interleaved/worker-w0.log" >> "$L" 2>&1
            rm -rf "$d"
        done
        if [ -d .device-old ]; then
            LD_LIBRARY_PATH="$PWD/.device-old/lib:/usr/local/cuda/lib64" timeout 90 \
                $B --bin .device-old/bin --out "$out/old" --parts grpo > /dev/null 2>&1
            grep -i "evals/min" "$out/old/bench.log" | sed 's/^/  .device-old: /' >> "$L"
            rm -rf "$out/old"
        fi ;;
    precision-settings)
        for sk in ${CR_SERVE_SETTINGS:-1,1 1,8 3,1 3,8}; do
            sp=${sk%,*} kr=${sk#*,}
            echo "  --- spares $sp, kept references $kr ($(date +%T))" >> "$L"
            timeout 120 $B --bin "$bin" --out "$out/prec" --parts precision \
                --env CRUCIBLE_SERVE_SPARES=$sp --env CRUCIBLE_SERVE_KEPT_REFS=$kr \
                > /dev/null 2>&1
            grep -A24 "precision" "$out/prec/bench.log" | grep "median_us\|statuses" \
                | grep -v "raw\|ref_" >> "$L"
            rm -rf "$out/prec"
        done ;;
    precision) # its worker's log (debug: each case's medians, the reference's beside them)
        # and the whole summary (raw and reference medians too) kept in logs.tgz
        timeout 120 $B --bin "$bin" --out "$out/prec" --parts precision --log-level debug \
            > /dev/null 2>&1
        grep -A40 "precision" "$out/prec/bench.log" | grep "median_us\|statuses\|not OK" | grep -v "raw\|ref_" >> "$L"
        grep -A60 "precision" "$out/prec/bench.log" > "$out/precision.txt"
        cp "$out"/prec/logs_precision_*/worker-w0.log "$out/precision-worker.log" 2> /dev/null
        rm -rf "$out/prec" ;;
    seq)
        timeout 120 $B --bin "$bin" --out "$out/seq" --parts seq --seq-count 16 > /dev/null 2>&1
        grep -i "evals/min" "$out/seq/bench.log" | sed 's/^/  /' >> "$L"
        rm -rf "$out/seq" ;;
    dobench-cuda) # the honest fast CUDA examples against do_bench (tests/gpu/run.sh quick:
        # its precision too, through the judge driver), one do_bench process
        [ -x /opt/torch/.venv/bin/python3 ] && PATH="/opt/torch/.venv/bin:$PATH"
        CR_DOBENCH_PROCESSES=1 CR_DOBENCH_PLACEMENTS=2 OUT="$out/db" timeout 300 \
            sh tests/gpu/run.sh quick > /dev/null 2>&1
        echo "  exit $?" >> "$L"
        grep "spread\|statuses\|not OK\|%\|worst" "$out/db/run.log" | grep -v "raw\|ref_" \
            | cut -c1-220 | tail -30 >> "$L"
        rm -rf "$out/db" ;;
    hacks) hacks "" 240 ;;
    redteam)
        sh tests/redteam/src/make.sh /tmp/cr-rt > /dev/null 2>&1
        hacks /tmp/cr-rt 120 ;;
    torch-ex|torch-ex:*)
        only=${CR_TORCH_ONLY:-l1_} t=t
        case $part in torch-ex:*) only=${part#torch-ex:} t=t-$(echo "$only" | tr -c 'a-z0-9_\n' -) ;; esac
        timeout 20 sh tests/gpu/torch_check.sh "$out/$t" env > /dev/null 2>&1
        grep "RESULT" "$out/$t/summary.txt" >> "$L"
        py=/usr/bin/python3
        for c in /opt/torch/.venv/bin/python3 /usr/bin/python3 python3; do
            "$c" -I -c 'import torch' 2> /dev/null && py=$c && break
        done
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1)
        CRUCIBLE_LOG_LEVEL=debug CR_TORCH_TRACE=1 CUDA_TORCH_ARCH_LIST=${cap:-9.0} timeout "${CR_TORCH_TIMEOUT:-200}" "$py" \
            tests/torch/check_examples.py --crucible "$bin/crucible" --needs all --workers 1 \
            --only "$only" --logs "$out/$t/ex" --extra=--time-budget-s=1 \
            --extra=--rse-target=${CR_TORCH_RSE:-0.01} --extra=--log-level=debug > "$out/$t/check.txt" 2>&1
        grep "^FAIL\|as expected" "$out/$t/check.txt" | cut -c1-300 >> "$L"
        # what ended an executor: the worker's log keeps the executors' stderr
        grep -a -B3 -A14 "Traceback\|ended its process\|harness: " "$out/$t/ex/logs/worker-w0.log" \
            2> /dev/null | cut -c1-300 | head -200 > "$out/$t/errors.txt"
        # the timing cross-check's figures, a job's and a pair's (torch_judge.c), beside the
        # compiles that ran then: what the next look at a false timing_mismatch needs
        grep -a "cross-check\|torch pair\|torch clocks\|RUN host us\|timing: \|compile\|job \|verdict" \
            "$out/$t/ex/logs/worker-w0.log" 2> /dev/null > "$out/$t/pairs.txt"
        # where a GPU RUN's host time goes (crucible_torch.py's CR_TORCH_TRACE lines)
        python3 - "$out/$t/ex/logs/worker-w0.log" >> "$L" 2>&1 <<'PY'
import re, sys, statistics
pat = re.compile(r"crucible-torch: (\w+) RUN host us: record ([0-9.]+), forward ([0-9.]+), "
                 r"record ([0-9.]+), synchronise ([0-9.]+); events ([0-9.]+)")
by, heads = {}, []
hp = re.compile(r"torch judge: head ([0-9.]+) us")
for line in open(sys.argv[1], errors="replace"):
    m = pat.search(line)
    if m:
        by.setdefault(m.group(1), []).append([float(g) for g in m.groups()[1:]])
    m = hp.search(line)
    if m:
        heads.append(float(m.group(1)))
if heads:
    print("  judge's head (torch_judge.c note 5): %d jobs, median %.1f us, range %.1f-%.1f us"
          % (len(heads), statistics.median(heads), min(heads), max(heads)))
for role, rows in sorted(by.items()):
    med = [statistics.median(c) for c in zip(*rows)]
    print("  %s RUNs %d, host us medians: record %.1f, forward %.1f, record %.1f, "
          "synchronise %.1f; events %.1f" % (role, len(rows), *med))
PY
        [ "${CR_TORCH_DOBENCH:-1}" = 1 ] && timeout "${CR_DOBENCH_TIMEOUT:-240}" "$py" tests/gpu/torch_dobench.py --results "$out/$t/ex/results.jsonl" \
            --src "$PWD" --python "$py" --prebuild "${CR_DOBENCH_PREBUILD:-8}" > "$out/$t/dobench.txt" 2>&1
        tail -12 "$out/$t/dobench.txt" | sed 's/^/  /' >> "$L"
        ;;
    torch-hacks-gpu) # the torch hack suite's GPU rows (tests/hacks/torch-gpu), after torch-ex
        # (whose env step points crucible-torch at the Python with torch)
        CR_TEST_BIN_DIR=$bin CR_TEST_SOURCE_DIR=$PWD CR_TORCH_DEVICE=cuda CR_HACKS_LANG=torch-gpu \
            CRUCIBLE_BACKENDS=torch CR_HACKS_WORKERS=1 CRUCIBLE_COMPILE_TIMEOUT_S=300 \
            CRUCIBLE_LOG_DIR="$out/th" CRUCIBLE_LOG_LEVEL=debug CR_TORCH_TRACE=1 \
            timeout "${CR_TORCH_HACKS_TIMEOUT:-200}" "$bin/test_hacks" --jobs 1 \
            > "$out/torch-hacks.txt" 2>&1
        echo "  exit $?" >> "$L"
        grep "candidates (\|status .*expected\|FAIL" "$out/torch-hacks.txt" | cut -c1-300 | tail -14 >> "$L"
        grep -a -h "cross-check\|torch pair\|torch clocks\|RUN host us\|timing: \|job " "$out"/th/worker-w*.log \
            > "$out/th-pairs.txt" 2> /dev/null
        # where each GPU hack row's RUN time went, side by side (tests/gpu/torch_pairs.py)
        for w in "$out"/th/worker-w*.log; do
            python3 tests/gpu/torch_pairs.py "$w" 07_ 10_ honest/ 2> /dev/null | sed 's/^/  /' >> "$L"
        done ;;
    torch-bench) # $CR_BENCH_N KernelBench-format candidates through one worker against the
        # first $CR_BENCH_SEQ_N of them one after another as KernelBench's script does
        # (tests/gpu/torch_bench.py; an extension's compile is ~70 s of nvcc on each side)
        [ -x /opt/torch/.venv/bin/python3 ] && PATH="/opt/torch/.venv/bin:$PATH"
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1)
        CUDA_TORCH_ARCH_LIST=${cap:-9.0} CR_BENCH_N=${CR_BENCH_N:-64} \
            CR_BENCH_SEQ_N=${CR_BENCH_SEQ_N:-2} timeout "${CR_BENCH_TIMEOUT:-560}" \
            sh tests/gpu/torch_check.sh "$out/tb" bench > /dev/null 2>&1
        echo "  exit $?" >> "$L"
        grep "BENCH\|RESULT" "$out/tb/run.log" | cut -c1-300 | sed 's/^/  /' >> "$L" ;;
    nccl)
        timeout 580 sh tests/gpu/nccl.sh check "$bin" "$out" ;;
    nccl-spread)
        timeout 580 sh tests/gpu/nccl.sh spread "$bin" "$out" ;;
    *) echo "  unknown part" >> "$L" ;;
    esac
done
# At most 8 files come back from the device tool: everything but the summary, packed into one
# (logs.tgz, bounded: the largest logs cut to their last 16 MiB first).
find "$out" -type f -name '*.log' -size +16M -exec sh -c 'tail -c 16M "$1" > "$1.t" && mv "$1.t" "$1"' _ {} \;
(cd "$out" && find . -type f ! -name summary.log ! -name logs.tgz | tar czf logs.tgz -T - 2> /dev/null &&
    find . -mindepth 1 ! -name summary.log ! -name logs.tgz -delete 2> /dev/null)
cat "$L"
