#!/usr/bin/env bash
# Set up this Debian 12 host for OCX: the Debian packages it needs and a
# virtual environment at .venv with OCX installed in it. Idempotent.
#
#   contrib/setup.sh          what the tools and a node need
#   contrib/setup.sh --test   also what the test suite needs (Docker engine,
#                             mmdebstrap for the systemd test image, chromium
#                             for the web page's test, D30)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(fossil python3 python3-venv python3-dev gcc pkg-config libsystemd-dev git ca-certificates)
if [ "${1:-}" = --test ]; then
    packages+=(docker.io mmdebstrap chromium)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pystemd (the node extra) builds from source against libsystemd-dev.
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
extras="node"
[ "${1:-}" = --test ] && extras="node,test"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
echo "setup: ready; OCX is .venv/bin/ocx" >&2
