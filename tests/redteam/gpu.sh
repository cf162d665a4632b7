#!/bin/sh
# Runs the CUDA red-team suite on the GPU machine, from the repository root,
# with the programs of a device pack in .device/bin (tests/gpu/run.sh's).
#   sh tests/redteam/gpu.sh [OUT]      (OUT: where the suite is built; /tmp/rt)
set -e
out=${1:-/tmp/rt}
sh tests/redteam/src/make.sh "$out"
CR_HACKS_DIR=$out CR_TEST_BIN_DIR=$PWD/.device/bin CR_TEST_SOURCE_DIR=$PWD CR_HACKS_LANG=cuda \
    CRUCIBLE_BACKENDS=cuda CR_HACKS_WORKERS=1 CRUCIBLE_TIME_BUDGET_S=0.3 .device/bin/test_hacks
