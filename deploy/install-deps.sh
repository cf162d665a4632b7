#!/bin/sh
# Installs every Debian package Crucible needs to build, test and run.
# Idempotent: packages already present are left alone; apt-get update runs
# only when something is missing. Run as root (or with sudo available).
set -eu

PKGS="build-essential cmake pkg-config
libzmq3-dev libsodium-dev
libprotobuf-c-dev protobuf-c-compiler
libjansson-dev libsqlite3-dev sqlite3
libcriterion-dev libhwloc-dev hwloc
libcurl4-openssl-dev libseccomp-dev
libmicrohttpd-dev
python3 clang
python3-torch libtorch-dev pybind11-dev python3-numpy ninja-build
python3-yaml systemd prometheus chromium
slurmctld slurmd slurm-client munge"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

# The Kubernetes manifests' schema check (tests/deploy/k8s_check.sh) runs on
# the API's own OpenAPI schemas, from the npm registry, pinned.
npm_deps() {
    d="$(dirname "$0")/../tests/deploy/k8s-schema"
    [ -d "$d/node_modules/kubernetes-models" ] ||
        (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
}

# node and npm: the machine's own where it has them (the image's NodeSource
# build bundles npm, which Debian's npm package conflicts with), else Debian's
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    npm_deps
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing:$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
npm_deps
