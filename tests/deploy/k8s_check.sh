#!/bin/sh
# deploy/k8s/: every manifest passes tests/deploy/k8s_check.py (a strict
# structural check: unknown fields, GPU limits, probes) and the Kubernetes
# API's own OpenAPI schemas (tests/deploy/k8s-schema/validate.mjs); each check
# is first shown to refuse a broken copy.
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
# the Kubernetes API's own schemas (npm kubernetes-models, installed by
# deploy/install-deps.sh): types, required fields, enums
V="$CR_SRC/tests/deploy/k8s-schema/validate.mjs"
command -v node >/dev/null || fail "node is not installed (deploy/install-deps.sh)"
sed 's/replicas: 1/replicas: one/' "$M/coordinator.yaml" >"$T/r.yaml"
if node "$V" "$T/r.yaml" >/dev/null 2>&1; then
    fail "the schema check accepted replicas: one"
fi
node "$V" "$M"/*.yaml || fail "deploy/k8s does not pass the Kubernetes schemas"
