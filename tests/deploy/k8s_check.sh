#!/bin/sh
# deploy/k8s/: every manifest passes tests/deploy/k8s_check.py (a strict
# structural check: no Kubernetes schema validator is packaged in Debian);
# the check is first shown to refuse broken copies.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CHK="$CR_SRC/tests/deploy/k8s_check.py"
M="$CR_SRC/deploy/k8s"
sed 's/nvidia.com\/gpu: 1}/nvidia.com\/gpu: 2}/' "$M/worker.yaml" >"$T/w.yaml"
if $PY "$CHK" "$M/namespace.yaml" "$M/secrets.example.yaml" "$M/coordinator.yaml" "$T/w.yaml" >/dev/null; then
    fail "a worker with 2 GPUs was accepted"
fi
sed 's/readinessProbe:/readinesProbe:/' "$M/coordinator.yaml" >"$T/c.yaml"
if $PY "$CHK" "$M/namespace.yaml" "$M/secrets.example.yaml" "$T/c.yaml" "$M/worker.yaml" >/dev/null; then
    fail "a misspelt field was accepted"
fi
$PY "$CHK" "$M"/*.yaml || fail "deploy/k8s does not pass"
