#!/bin/sh
# deploy/Containerfile: built where a container engine exists (podman or
# docker, and CR_CONTAINER_BUILD=1, since a build pulls the CUDA base image),
# else checked by tests/deploy/container_check.py (structural: no Dockerfile
# linter is packaged in Debian). The check is first shown to refuse a broken copy.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CHK="$CR_SRC/tests/deploy/container_check.py"
sed 's/^FROM nvidia\/cuda:12.4.1-devel-ubuntu22.04$/FROM nvidia\/cuda:latest/; s/COPY --from=build/COPY --from=biuld/' \
    "$CR_SRC/deploy/Containerfile" >"$T/broken"
if $PY "$CHK" "$T/broken" "$CR_SRC/CMakeLists.txt" >"$T/broken.log"; then fail "a broken Containerfile was accepted"; fi
grep -q 'no such stage' "$T/broken.log" || fail "the bad stage was not found"
$PY "$CHK" "$CR_SRC/deploy/Containerfile" "$CR_SRC/CMakeLists.txt" || fail "deploy/Containerfile"
if [ "${CR_CONTAINER_BUILD:-0}" = 1 ]; then
    engine=$(command -v podman || command -v docker) || fail "CR_CONTAINER_BUILD=1 but no podman or docker"
    "$engine" build -f "$CR_SRC/deploy/Containerfile" -t crucible:test "$CR_SRC" || fail "container build"
fi
