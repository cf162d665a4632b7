#!/usr/bin/python3
"""k8s_check.py MANIFEST...: a strict structural check of deploy/k8s/.

No Kubernetes schema validator is packaged in Debian 12 (kubeconform,
kubeval are not), so this is a stdlib + python3-yaml check against a schema
written here for the kinds Crucible ships: every key must be known for its
object (a typo is an error, as kubectl --validate=strict makes it), every
type must match, required fields must be present; then the deployment
policy: selectors match their pod labels, every container has readiness and
liveness probes and resource requests and limits, a worker container asks
for exactly nvidia.com/gpu: 1 in its limits, every Secret a pod mounts is
defined, every named targetPort of a Service exists on a container it selects.
Exits 1 listing every problem."""
import sys

import yaml

S, I, B, M, L = str, int, bool, dict, list
Q = (str, int)  # quantities and int-or-string ports
ANY = object()

LABELS = {"*": S}
META = {"name": S, "namespace": S, "labels": LABELS, "annotations": LABELS}
PROBE = {"httpGet": {"path": S, "port": Q, "scheme": S}, "tcpSocket": {"port": Q},
         "exec": {"command": [S]}, "initialDelaySeconds": I, "periodSeconds": I,
         "timeoutSeconds": I, "failureThreshold": I, "successThreshold": I}
RES = {"requests": {"*": Q}, "limits": {"*": Q}}
ENV = {"name": S, "value": S, "valueFrom": {"fieldRef": {"fieldPath": S},
                                            "secretKeyRef": {"name": S, "key": S}}}
CSEC = {"allowPrivilegeEscalation": B, "readOnlyRootFilesystem": B, "runAsUser": I,
        "runAsNonRoot": B, "privileged": B,
        "capabilities": {"add": [S], "drop": [S]}, "seccompProfile": {"type": S}}
CONTAINER = {"name": S, "image": S, "args": [S], "command": [S], "env": [ENV],
             "ports": [{"name": S, "containerPort": I, "protocol": S}],
             "readinessProbe": PROBE, "livenessProbe": PROBE, "startupProbe": PROBE,
             "resources": RES, "securityContext": CSEC, "imagePullPolicy": S,
             "volumeMounts": [{"name": S, "mountPath": S, "readOnly": B, "subPath": S}]}
VOLUME = {"name": S, "secret": {"secretName": S, "defaultMode": I},
          "emptyDir": {"sizeLimit": Q, "medium": S},
          "persistentVolumeClaim": {"claimName": S}, "hostPath": {"path": S, "type": S}}
POD = {"containers": [CONTAINER], "volumes": [VOLUME], "nodeSelector": LABELS,
       "terminationGracePeriodSeconds": I, "serviceAccountName": S,
       "securityContext": {"runAsUser": I, "runAsGroup": I, "runAsNonRoot": B, "fsGroup": I},
       "tolerations": [{"key": S, "operator": S, "value": S, "effect": S}]}
TEMPLATE = {"metadata": META, "spec": POD}
SELECTOR = {"matchLabels": LABELS}
KINDS = {
    ("v1", "Namespace"): {"metadata": META},
    ("v1", "Secret"): {"metadata": META, "type": S, "stringData": {"*": S}, "data": {"*": S}},
    ("v1", "Service"): {"metadata": META, "spec": {
        "selector": LABELS, "type": S, "clusterIP": S,
        "ports": [{"name": S, "port": I, "targetPort": Q, "protocol": S}]}},
    ("apps/v1", "StatefulSet"): {"metadata": META, "spec": {
        "serviceName": S, "replicas": I, "selector": SELECTOR, "template": TEMPLATE,
        "volumeClaimTemplates": [{"metadata": META, "spec": {
            "accessModes": [S], "storageClassName": S, "resources": RES}}]}},
    ("apps/v1", "Deployment"): {"metadata": META, "spec": {
        "replicas": I, "selector": SELECTOR, "template": TEMPLATE,
        "strategy": {"type": S}}},
    ("apps/v1", "DaemonSet"): {"metadata": META, "spec": {
        "selector": SELECTOR, "template": TEMPLATE}},
}
REQUIRED = {"containers": ["name", "image"], "volumes": ["name"], "env": ["name"]}

errors = []


def check(v, schema, path):
    if isinstance(schema, list):
        if not isinstance(v, list):
            errors.append("%s: expected a list" % path)
            return
        for i, e in enumerate(v):
            check(e, schema[0], "%s[%d]" % (path, i))
    elif isinstance(schema, dict):
        if not isinstance(v, dict):
            errors.append("%s: expected a mapping" % path)
            return
        for k, e in v.items():
            if k in schema:
                check(e, schema[k], "%s.%s" % (path, k))
            elif "*" in schema:
                check(e, schema["*"], "%s.%s" % (path, k))
            else:
                errors.append("%s: unknown field '%s'" % (path, k))
        last = path.split(".")[-1].split("[")[0]
        for r in REQUIRED.get(last, []):
            if r not in v:
                errors.append("%s: missing '%s'" % (path, r))
    elif schema is not ANY:
        ok = isinstance(v, schema) and not (schema in (I, Q) and isinstance(v, bool))
        if not ok:
            errors.append("%s: expected %s, got %r" % (path, getattr(schema, "__name__", schema), v))


def main(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            for i, d in enumerate(yaml.safe_load_all(f)):
                if d is not None:
                    docs.append(("%s#%d" % (p, i), d))
    secrets = {d["metadata"]["name"] for _, d in docs if d.get("kind") == "Secret"}
    for where, d in docs:
        key = (d.get("apiVersion"), d.get("kind"))
        if key not in KINDS:
            errors.append("%s: unknown apiVersion/kind %s" % (where, key))
            continue
        body = {k: v for k, v in d.items() if k not in ("apiVersion", "kind")}
        check(body, KINDS[key], "%s:%s" % (where, d["kind"]))
        if not d.get("metadata", {}).get("name"):
            errors.append("%s: no metadata.name" % where)
        spec = d.get("spec", {})
        tpl = spec.get("template")
        if not tpl:
            continue
        want = spec.get("selector", {}).get("matchLabels", {})
        have = tpl.get("metadata", {}).get("labels", {})
        if not want or any(have.get(k) != v for k, v in want.items()):
            errors.append("%s: selector %s does not match the pod labels %s" % (where, want, have))
        pod = tpl.get("spec", {})
        vols = {v["name"] for v in pod.get("volumes", [])}
        vols |= {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        for v in pod.get("volumes", []):
            if "secret" in v and v["secret"]["secretName"] not in secrets:
                errors.append("%s: volume %s mounts undefined Secret %s"
                              % (where, v["name"], v["secret"]["secretName"]))
        for c in pod.get("containers", []):
            n = "%s container %s" % (where, c.get("name"))
            for p in ("readinessProbe", "livenessProbe"):
                if p not in c:
                    errors.append("%s: no %s" % (n, p))
            r = c.get("resources", {})
            if not r.get("limits") or not r.get("requests"):
                errors.append("%s: resources need requests and limits" % n)
            for m in c.get("volumeMounts", []):
                if m["name"] not in vols:
                    errors.append("%s: mount of unknown volume %s" % (n, m["name"]))
            gpu = r.get("limits", {}).get("nvidia.com/gpu")
            if c.get("args", [""])[0] == "worker" and gpu != 1:
                errors.append("%s: a worker needs nvidia.com/gpu: 1 in limits (has %r)" % (n, gpu))
            ports = {p.get("name") for p in c.get("ports", [])}
            if any("containerPort" not in p for p in c.get("ports", [])):
                errors.append("%s: a port without containerPort" % n)
            for p in ("readinessProbe", "livenessProbe"):
                port = c.get(p, {}).get("httpGet", {}).get("port")
                if isinstance(port, str) and port not in ports:
                    errors.append("%s: %s names unknown port %s" % (n, p, port))
    # Services: named target ports exist on a selected container
    for where, d in docs:
        if d.get("kind") != "Service":
            continue
        sel = d["spec"].get("selector", {})
        names = set()
        for _, w in docs:
            tpl = w.get("spec", {}).get("template")
            if tpl and all(tpl["metadata"].get("labels", {}).get(k) == v for k, v in sel.items()):
                for c in tpl["spec"]["containers"]:
                    names |= {p.get("name") for p in c.get("ports", [])}
        if not names:
            errors.append("%s: the Service selects no pod template" % where)
        for p in d["spec"].get("ports", []):
            if isinstance(p.get("targetPort"), str) and p["targetPort"] not in names:
                errors.append("%s: targetPort %s is no container port" % (where, p["targetPort"]))
    kinds = {d.get("kind") for _, d in docs}
    for k in ("StatefulSet", "Service", "Secret"):
        if k not in kinds:
            errors.append("no %s among the manifests" % k)
    if not kinds & {"Deployment", "DaemonSet"}:
        errors.append("no worker Deployment or DaemonSet")
    for e in errors:
        print("k8s_check: " + e)
    print("k8s_check: %d documents, %d problems" % (len(docs), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
