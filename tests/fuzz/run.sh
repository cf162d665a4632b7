#!/bin/sh
# Builds the libFuzzer harnesses in their own build dir (clang, CRUCIBLE_FUZZ)
# and runs each for a bounded time from its seed corpus.
#
#   tests/fuzz/run.sh [seconds-per-harness] [harness...]
#
# Defaults: 60 s each, all four harnesses. Environment: BUILD (build dir,
# default build-fuzzers under the repo), JOBS (make -j, default 2).
# New inputs libFuzzer finds go to a scratch corpus, never into the tree;
# a crash leaves crash-* in $BUILD/fuzz-out/<harness>/: reproduce it with
#   $BUILD/<harness> <file>
# then fix the module and copy the file to tests/fuzz/regressions/<harness>/
# (test_fuzz_regress replays that folder in every ctest run).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-"fuzz_envelope fuzz_task fuzz_record fuzz_elfsym"}
build=${BUILD:-$root/build-fuzzers}
jobs=${JOBS:-2}

command -v clang >/dev/null || { echo "run.sh: clang not found (deploy/install-deps.sh installs it)" >&2; exit 2; }

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCRUCIBLE_FUZZ=ON \
      -DCRUCIBLE_TESTS=OFF -DCRUCIBLE_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
make -C "$build" -j"$jobs" $harnesses >/dev/null

status=0
for h in $harnesses; do
    out="$build/fuzz-out/$h"
    rm -rf "$out"
    mkdir -p "$out/corpus"
    # scratch corpus first (new finds land there), then the seeds and the
    # saved regressions, read-only
    echo "== $h: ${secs}s"
    regress=""
    [ -d "$here/regressions/$h" ] && regress="$here/regressions/$h"
    # shellcheck disable=SC2086
    if ( cd "$out" && "$build/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
            -max_len=65536 -print_final_stats=1 \
            corpus "$here/corpus/$h" $regress ) >"$out/log" 2>&1; then
        :
    else
        status=1
        echo "   CRASH: see $out/log and $out/crash-*" >&2
    fi
    grep -E "^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::peak_rss_mb" "$out/log" \
        | sed 's/^/   /'
    grep -E "^#[0-9]+ +DONE" "$out/log" | tail -1 | sed 's/^/   /'
done
exit $status
