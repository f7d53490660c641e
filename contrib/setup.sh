#!/usr/bin/env bash
# Set up this Debian 12 host for OCX: the Debian packages it needs and a
# virtual environment at .venv with OCX installed in it. Idempotent.
#
#   contrib/setup.sh          what the tools and a node need
#   contrib/setup.sh --test   also what the test suite needs (Docker engine,
#                             mmdebstrap for the systemd test image, chromium
#                             for the web page's test, D30, the agent CLIs
#                             whose parsers the runner pages' test runs, and
#                             stress-ng, to run the suite on a loaded machine)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(fossil python3 python3-venv python3-dev gcc pkg-config libsystemd-dev git ca-certificates)
if [ "${1:-}" = --test ]; then
    packages+=(docker.io mmdebstrap chromium stress-ng)
    # Debian's npm, unless a node that brings its own is already here.
    command -v npm >/dev/null || packages+=(nodejs npm)
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
# The agent CLIs the runner pages in contrib/runners/ name, for their
# command-line parsers only (tests/contrib/): outside the tree, pinned to
# the versions the test's expectations were read from.
if [ "${1:-}" = --test ]; then
    agents=${OCX_AGENTS_DIR:-/var/cache/ocx-tests/agents}
    wanted="@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0"
    if [ "$(cat "$agents/installed" 2>/dev/null)" != "$wanted" ] \
        || [ ! -x "$agents/node_modules/.bin/claude" ] || [ ! -x "$agents/node_modules/.bin/codex" ]; then
        echo "setup: installing $wanted into $agents" >&2
        mkdir -p "$agents"
        # shellcheck disable=SC2086
        npm install --no-audit --no-fund --loglevel=error --prefix "$agents" $wanted >&2
        echo "$wanted" >"$agents/installed"
    fi
fi
echo "setup: ready; OCX is .venv/bin/ocx" >&2
