#!/usr/bin/env bash
# The README's first command, on a fresh Debian 12 machine, as root:
#
#   bash contrib/demo.sh
#
# Where PID 1 is systemd: provision this host (/opt/ocx/venv, as the VM)
# and run `ocx demo`, which sets up the node `demo` (`ocx node init`).
# Either way the node's first release is this working tree (D45): `ocx demo
# --wheelhouse DIR` makes it a wheel, and `ocx release` stages it offline
# with the wheels of OCX's dependencies in DIR (here: pip wheel from the
# registry; in the container: the test image's wheelhouse) and accepts it,
# so the node runs through `current` and moves on from its page.
# Elsewhere (a container, a VM booted without systemd): start a Docker
# engine, build or reuse the systemd test image, start a long-lived
# container `ocx-demo` whose PID 1 is systemd (the test container's run
# options, tests/container/systemd_container.py) with the Fossil server
# published on 127.0.0.1:$OCX_DEMO_PORT of this host, and run `ocx demo` in
# it. Never boots systemd on this machine's own root
# (shared/notes/real-systemd-for-tests.md). Run it again: it reuses all.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
host_port=${OCX_DEMO_PORT:-8080}
relay_port=8090 # inside the container: units/ocx-publish.socket relays it
log() { echo "demo: $*" >&2; }
t0=$EPOCHREALTIME
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'; }

if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
    bash contrib/setup.sh
    OCX_SRC=$repo sh vagrant/provision.sh >&2
    # The wheels a release is built with offline (D48): OCX's dependencies,
    # once for each list of them (pystemd is built here: provision.sh
    # installed gcc for it).
    requirements=$(sh vagrant/provision.sh --requirements pyproject.toml)
    wheels=/var/cache/ocx/wheelhouse-$(echo "$requirements" | sha256sum | cut -c1-12)
    if [ ! -f "$wheels/.complete" ]; then
        mkdir -p "$wheels"
        echo "$requirements" >"$wheels/requirements.txt"
        /opt/ocx/venv/bin/pip wheel -q -w "$wheels" -r "$wheels/requirements.txt" >&2
        touch "$wheels/.complete"
    fi
    exec /opt/ocx/venv/bin/ocx demo --wheelhouse "$wheels"
fi

log "PID 1 is $(cat /proc/1/comm), not systemd: the node goes into a systemd container"
bash contrib/setup.sh --test # docker.io, mmdebstrap, testcontainers in .venv
DOCKER_HOST=$(sh tests/container/engine.sh)
export DOCKER_HOST
image=$(bash tests/container/build-image.sh)
log "image $image ready after $(since "$t0")"

state=$(docker inspect -f '{{.State.Running}} {{.Config.Image}}' ocx-demo 2>/dev/null || true)
if [ "$state" = "true $image" ]; then
    log "reusing the running container ocx-demo"
else
    [ -n "$state" ] && { log "replacing ocx-demo ($state)"; docker rm -f ocx-demo >/dev/null; }
    t1=$EPOCHREALTIME
    .venv/bin/python - "$image" "$repo" "$host_port" "$relay_port" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from tests.container.systemd_container import SystemdContainer

image, repo, host_port, relay_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


class DemoContainer(SystemdContainer):
    """The test container, named, long-lived, with one port on the host's 127.0.0.1."""

    def _container(self):
        c = super()._container().with_name("ocx-demo")
        c.ports[f"{relay_port}/tcp"] = ("127.0.0.1", host_port)  # docker-py's (ip, port)
        return c


# Not stopped on exit: no Ryuk, so the container outlives this script.
DemoContainer(image, src=repo).start()
PY
    log "container ocx-demo running after $(since "$t1")"
fi

# The image's wheelhouse, mounted read-only by the test container's options
# (tests/container/systemd_container.py): the first release is built with it.
wheels=/var/cache/ocx-tests/wheelhouse
if docker exec ocx-demo test -d "$wheels"; then
    release=(--wheelhouse "$wheels")
else
    log "no wheelhouse in ocx-demo: the node runs from the installation, with no release (docs/releases.md)"
    release=()
fi
docker exec ocx-demo /opt/ocx/venv/bin/ocx demo --publish "$relay_port" --container ocx-demo "${release[@]}"
echo
echo "On this host: the Fossil server is http://127.0.0.1:$host_port/ (relayed into ocx-demo)."
echo "  export DOCKER_HOST=$DOCKER_HOST                the engine the demo started, for the docker commands"
echo "  docker exec ocx-demo cat /etc/ocx/demo.admin-password    the admin's password"
echo "  docker rm -f ocx-demo                                    to remove it all"
log "done in $(since "$t0")"
