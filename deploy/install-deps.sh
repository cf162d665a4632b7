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
python3-yaml systemd prometheus chromium
slurmctld slurmd slurm-client munge"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing:$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
