#!/bin/sh
# tests/gpu/torch_check.sh — the torch backend on a GPU machine (docs/torch.md), where
# nothing is installed: the programs come from a device-pack folder (default .device:
# bin/, lib/), PyTorch, Triton and nvcc are the machine's.
#
#   build here:  cmake -S . -B build && cmake --build build -j2
#                ../shared/tools/device-pack -o .device build/crucible build/crucible-runner \
#                    build/crucible-executor build/test_hacks build/libcrucible-pysandbox.so
#                cp build/crucible-torch .device/bin/
#   (crucible-torch is a script: device-pack's ldd of it fails and the pack stops there,
#   so it is copied on its own; the library must sit beside it, in bin/)
#   there:       sh tests/gpu/torch_check.sh LOGDIR [all|env|examples|hacks|dobench|bench]
#
# Steps (all by default), each ending in one line "RESULT <step>: PASS|FAIL ...":
#   env       GPU, driver, python, torch, triton, nvcc
#   examples  every torch example (tasks/torch, tasks/torch-candidates, CUDA load_inline,
#             Triton and CPU ones) gets its expected status (check_examples.py --needs all)
#   hacks     the torch hack suite (tests/hacks/torch, models kept on the CPU by
#             CR_TORCH_DEVICE=cpu: its verdicts are the CPU profile's) and its GPU rows
#             (tests/hacks/torch-gpu, on the GPU), through test_hacks
#   dobench   crucible's median against triton.testing.do_bench (fresh process each) for
#             every honest CUDA/Triton example that came back OK: within 2%?
#   bench     64 KernelBench-format candidates through one worker against the same 64
#             evaluated one after another KernelBench's way (fresh process, compile,
#             5 correctness trials, 100 timed trials): evaluations per minute, ratio
#             (goal >= 5x). The sequential side is the long one (a fresh process and an
#             nvcc build per candidate, ~40 s each: ~45 min for 64); CR_BENCH_SEQ_N=16 runs
#             the first 16 of them and takes their rate, CR_BENCH_N the batch size.
# Logs: LOGDIR/<step>/..., LOGDIR/summary.txt. Never changes a GPU setting.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
logs=${1:?usage: torch_check.sh LOGDIR [all|env|examples|hacks|dobench|bench]}
what=${2:-all}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
dev=${CR_DEVICE_DIR:-$root/.device}
bin=${CR_BIN_DIR:-$dev/bin}
[ -x "$bin/crucible" ] || bin=$root/build
export LD_LIBRARY_PATH="$dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
[ -d /usr/local/cuda/lib64 ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"
export CR_TEST_SOURCE_DIR="$root" CR_TEST_BIN_DIR="$bin"
# the architecture load_inline builds for in the compile box (which shows no GPU)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$cap" ] && export CUDA_TORCH_ARCH_LIST="${CUDA_TORCH_ARCH_LIST:-$cap}"
t0=$(date +%s)
summary=$logs/summary.txt
: > "$summary"
log() { echo "[$(( $(date +%s) - t0 ))s] $*" | tee -a "$logs/run.log"; }
result() { echo "RESULT $*" | tee -a "$summary" "$logs/run.log"; }

# The Python that has torch: crucible-torch's shebang names /usr/bin/python3; where torch
# lives in another interpreter the packed copy is pointed at it. (The worker's compile box
# shows /usr, /bin, /lib*, each compiler's prefix and, for a script, its interpreter's
# prefix: a virtual environment's packages are seen there.)
py=${CR_TORCH_PYTHON:-}
for c in /usr/bin/python3 "$(command -v python3)"; do
    [ -n "$py" ] && break
    [ -x "$c" ] && "$c" -I -c 'import torch' 2>/dev/null && py=$c
done
if [ -z "$py" ]; then
    result "env: FAIL no python3 with torch (set CR_TORCH_PYTHON)"
    exit 1
fi
if [ "$py" != /usr/bin/python3 ] && [ -w "$bin/crucible-torch" ]; then
    sed -i "1s|.*|#!$py -I|" "$bin/crucible-torch"
    log "crucible-torch runs under $py"
fi

step_env() {
    mkdir -p "$logs/env"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total \
        --format=csv > "$logs/env/gpu.txt" 2>&1
    "$py" -I - > "$logs/env/python.txt" 2>&1 <<'PY'
import sys, torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name())
try:
    import triton
    print("triton", triton.__version__)
except Exception as e:
    print("triton missing:", e)
PY
    "$bin/crucible-torch" --version >> "$logs/env/python.txt" 2>&1
    command -v nvcc > /dev/null && nvcc --version | tail -n 1 >> "$logs/env/python.txt"
    cat "$logs/env/gpu.txt" "$logs/env/python.txt" | sed 's/^/  /' | tee -a "$logs/run.log"
    if [ ! -f "$bin/libcrucible-pysandbox.so" ] || [ ! -f "$bin/crucible-torch" ]; then
        result "env: FAIL $bin lacks crucible-torch or libcrucible-pysandbox.so (packed as the header says?)"
    elif grep -q 'available True' "$logs/env/python.txt" && grep -q '^triton [0-9]' "$logs/env/python.txt" \
        && command -v nvcc > /dev/null; then
        result "env: PASS"
    else
        result "env: FAIL (need torch with CUDA, triton and nvcc; see $logs/env)"
    fi
}

step_examples() {
    log "examples: every torch example, CUDA, Triton and CPU candidates, one worker"
    mkdir -p "$logs/examples"
    "$py" tests/torch/check_examples.py --crucible "$bin/crucible" --needs all --workers 1 \
        --logs "$logs/examples" --extra=--time-budget-s=1 --extra=--rse-target=0.01 \
        > "$logs/examples/check.txt" 2>&1 || true
    cat "$logs/examples/check.txt" | tee -a "$logs/run.log" > /dev/null
    grep -E '^FAIL' "$logs/examples/check.txt" | sed 's/^/  /' | tee -a "$logs/run.log"
    line=$(tail -n 1 "$logs/examples/check.txt")
    if grep -q '^FAIL' "$logs/examples/check.txt" || ! grep -q 'as expected' "$logs/examples/check.txt"; then
        result "examples: FAIL $line"
    else
        result "examples: PASS $line"
    fi
}

step_hacks() {
    mkdir -p "$logs/hacks"
    for lang in torch torch-gpu; do
        # the CPU suite's verdicts are the CPU profile's (no threads, no processes)
        dev=cuda
        [ $lang = torch ] && dev=cpu
        log "hacks: $lang (models on the $dev)"
        CR_TORCH_DEVICE=$dev CR_HACKS_LANG=$lang CRUCIBLE_BACKENDS=torch CR_HACKS_WORKERS=1 \
            CRUCIBLE_COMPILE_TIMEOUT_S=300 CR_HACKS_TABLE="$logs/hacks/$lang.md" \
            timeout 900 "$bin/test_hacks" --jobs 1 > "$logs/hacks/$lang.log" 2>&1
        rc=$?
        grep -E 'candidates \(' "$logs/hacks/$lang.log" | tail -n 1 | sed 's/^/  /' | tee -a "$logs/run.log"
        grep -E '\| FAIL' "$logs/hacks/$lang.md" 2>/dev/null | sed 's/^/  /' | tee -a "$logs/run.log"
        if [ $rc -eq 0 ]; then result "hacks $lang: PASS"; else result "hacks $lang: FAIL (exit $rc, $logs/hacks/$lang.log)"; fi
    done
}

step_dobench() {
    mkdir -p "$logs/dobench"
    if [ ! -f "$logs/examples/results.jsonl" ]; then
        result "dobench: FAIL (run the examples step first: it gives crucible's medians)"
        return
    fi
    log "dobench: crucible's median against triton.testing.do_bench, honest CUDA/Triton candidates"
    "$py" tests/gpu/torch_dobench.py --results "$logs/examples/results.jsonl" --src "$root" \
        --python "$py" > "$logs/dobench/dobench.txt" 2>&1
    rc=$?
    cat "$logs/dobench/dobench.txt" | sed 's/^/  /' | tee -a "$logs/run.log" > /dev/null
    tail -n 1 "$logs/dobench/dobench.txt" | sed 's/^/  /' | tee -a "$logs/run.log"
    if [ $rc -eq 0 ]; then result "dobench: PASS $(tail -n 1 "$logs/dobench/dobench.txt")"
    else result "dobench: FAIL $(tail -n 1 "$logs/dobench/dobench.txt")"; fi
}

step_bench() {
    mkdir -p "$logs/bench"
    log "bench: 64 KernelBench-format candidates, one worker vs KernelBench-style sequential"
    "$py" tests/gpu/torch_bench.py --crucible "$bin/crucible" --src "$root" --python "$py" \
        --work "$logs/bench" --n "${CR_BENCH_N:-64}" --seq-n "${CR_BENCH_SEQ_N:-0}" \
        > "$logs/bench/bench.txt" 2>&1
    rc=$?
    grep '^BENCH' "$logs/bench/bench.txt" | sed 's/^/  /' | tee -a "$logs/run.log"
    ratio=$(grep '^BENCH ratio' "$logs/bench/bench.txt" | tail -n 1)
    if [ $rc -eq 0 ]; then result "bench: PASS $ratio"; else result "bench: FAIL (exit $rc) $ratio"; fi
}

case $what in
    all) step_env; step_examples; step_hacks; step_dobench; step_bench ;;
    env) step_env ;;
    examples) step_examples ;;
    hacks) step_hacks ;;
    dobench) step_dobench ;;
    bench) step_bench ;;
    *) echo "unknown step $what" >&2; exit 2 ;;
esac
log "done; summary:"
cat "$summary"
! grep -q ': FAIL' "$summary"
