#!/bin/sh
# Builds tests/redteam/c/NAME.c from tests/redteam/src/NAME.c: its header
# comment, then the kit, then its body (everything after the first line that
# reads "/* body */"). Each candidate is submitted alone, so each carries the kit.
set -e
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/[0-9]*.c; do
    out="$here/../c/$(basename "$f")"
    { sed '/^\/\* body \*\//,$d' "$f"; cat "$here/kit.h"; echo; sed '1,/^\/\* body \*\//d' "$f"; } >"$out"
done
