#!/bin/sh
# Builds the red-team suite into OUT (the build folder's redteam/, by CMake):
# OUT/c/NAME.c from tests/redteam/src/NAME.c (its header comment, then the
# kit, then its body: everything after the first line that reads
# "/* body */"), and OUT/c/expected.json; OUT/cuda/ the .cu
# candidates (kit_cuda.h spliced in the same way where they have that line),
# with OUT/cuda/expected.json. Each candidate is submitted alone,
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
# CUDA candidates: whole files, or, where one has a "/* body */" line,
# spliced around kit_cuda.h as the C ones are around kit.h
mkdir -p "$out/cuda"
for f in "$here"/[0-9]*.cu; do
    dst="$out/cuda/$(basename "$f")"
    if grep -q '^/\* body \*/' "$f"; then
        { sed '/^\/\* body \*\//,$d' "$f"; cat "$here/kit_cuda.h"; echo; sed '1,/^\/\* body \*\//d' "$f"; } >"$dst.tmp"
        mv "$dst.tmp" "$dst"
    else
        cp "$f" "$dst"
    fi
done
cp "$here/../expected-cuda.json" "$out/cuda/expected.json"
