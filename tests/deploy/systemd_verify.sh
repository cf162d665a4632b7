#!/bin/sh
# deploy/systemd/: every unit passes `systemd-analyze verify` (works without
# systemd as PID 1: it loads the units offline), with no warning in its
# output, and keeps the unit policy: Restart=on-failure, a RestartSec long
# enough that restarts never reach the default start-rate limit (5 starts in
# 10 s: RestartSec > 2 s), and the sandboxing directives. The check is first
# run on a broken unit, which it must refuse.
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (deploy/install-deps.sh)"
mkdir -p "$T/units"

# verify_dir DIR UNIT...: 0 when systemd-analyze accepts them without a warning
verify_dir() {
    d=$1; shift
    set +e
    (cd "$d" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$@") >"$T/verify.log" 2>&1
    rc=$?
    set -e
    # in a container systemd-analyze notes that it cannot read PID 1's environment
    grep -v -e 'Failed to read \$container of PID 1' -e '^$' "$T/verify.log" >"$T/verify.warn" || true
    [ $rc -eq 0 ] && [ ! -s "$T/verify.warn" ]
}

# the units, with ExecStart pointing at the build (verify wants the binary to exist)
for f in "$CR_SRC"/deploy/systemd/*.service; do
    sed "s|/usr/local/bin/crucible|$CR|g" "$f" >"$T/units/$(basename "$f")"
done
cp "$T/units/crucible-worker@.service" "$T/units/crucible-worker@3.service"

# the check can fail: a misspelt directive and a missing binary are refused
mkdir -p "$T/broken"
sed 's/^Restart=on-failure/Restrat=on-failure/' "$T/units/crucible-coordinator.service" >"$T/broken/crucible-coordinator.service"
if verify_dir "$T/broken" crucible-coordinator.service; then fail "a misspelt directive was accepted"; fi
sed "s|$CR|/nonexistent/crucible|" "$T/units/crucible-gateway.service" >"$T/broken/crucible-gateway.service"
if verify_dir "$T/broken" crucible-gateway.service; then fail "a missing ExecStart binary was accepted"; fi

verify_dir "$T/units" crucible-coordinator.service crucible-worker@3.service crucible-gateway.service \
    || { cat "$T/verify.log"; fail "systemd-analyze verify"; }

for f in "$CR_SRC"/deploy/systemd/*.service; do
    n=$(basename "$f")
    grep -qx 'Restart=on-failure' "$f" || fail "$n: no Restart=on-failure"
    s=$(sed -n 's/^RestartSec=\([0-9]*\)s$/\1/p' "$f")
    [ -n "$s" ] && [ "$s" -gt 2 ] || fail "$n: RestartSec must be over 2 s (5 starts in 10 s)"
    for d in ProtectSystem=strict ProtectHome=yes PrivateTmp=yes ProtectKernelModules=yes \
             RestrictRealtime=yes LockPersonality=yes SystemCallArchitectures=native UMask=0077; do
        grep -qx "$d" "$f" || fail "$n: no $d"
    done
done
# the coordinator and the gateway run no candidate: the full set
for n in crucible-coordinator.service crucible-gateway.service; do
    for d in NoNewPrivileges=yes PrivateDevices=yes RestrictNamespaces=yes MemoryDenyWriteExecute=yes \
             CapabilityBoundingSet= SystemCallFilter=@system-service; do
        grep -qx "$d" "$CR_SRC/deploy/systemd/$n" || fail "$n: no $d"
    done
done
grep -q -- '--gpu %i' "$CR_SRC/deploy/systemd/crucible-worker@.service" || fail "the worker unit is not per GPU"
echo "systemd units verified"
