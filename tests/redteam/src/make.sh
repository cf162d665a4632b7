#!/bin/sh
# Builds the red-team suite into OUT (the build folder's redteam/, by CMake):
# OUT/c/NAME.c from tests/redteam/src/NAME.c (its header comment, then the
# kit, then its body: everything after the first line that reads
# "/* body */"), and OUT/c/expected.json; OUT/cuda/ the .cu
# candidates as they are, with OUT/cuda/expected.json. Each candidate is submitted alone,
# so each carries the kit; only the sources are kept in the repository.
#   sh tests/redteam/src/make.sh OUT
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: make.sh OUT}
mkdir -p "$out/c"
for f in "$here"/[0-9]*.c; do
    dst="$out/c/$(basename "$f")"
    { sed '/^\/\* body \*\//,$d' "$f"; cat "$here/kit.h"; echo; sed '1,/^\/\* body \*\//d' "$f"; } >"$dst.tmp"
    mv "$dst.tmp" "$dst"
done
cp "$here/../expected-c.json" "$out/c/expected.json"
# CUDA candidates are whole files (they carry what they need themselves)
mkdir -p "$out/cuda"
cp "$here"/[0-9]*.cu "$out/cuda/"
cp "$here/../expected-cuda.json" "$out/cuda/expected.json"
