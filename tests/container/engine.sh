#!/bin/sh
# Make sure a Docker engine answers for the systemd tests, and print the
# DOCKER_HOST to use. Idempotent: an engine that already answers is used
# as it is. Nothing on these machines starts dockerd (policy-rc.d blocks
# service starts, PID 1 is not systemd), so we start it ourselves, on a
# private socket and data root that touch nothing else on the host.
set -eu
export DOCKER_HOST=${DOCKER_HOST:-unix:///run/ocx-docker.sock}
DATA_ROOT=${OCX_DOCKER_DATA_ROOT:-/var/lib/ocx-docker}
LOG=${OCX_DOCKER_LOG:-/var/log/ocx-dockerd.log}

answers() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
    echo "$DOCKER_HOST"; exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
    echo "engine.sh: installing docker.io" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y --no-install-recommends docker.io >&2
fi
case "$DOCKER_HOST" in
unix://*) sock=${DOCKER_HOST#unix://} ;;
*) echo "engine.sh: $DOCKER_HOST does not answer and is not a local socket" >&2; exit 1 ;;
esac
pidfile=${sock%.sock}.pid
echo "engine.sh: starting dockerd on $DOCKER_HOST (log $LOG)" >&2
mkdir -p "$DATA_ROOT"
# setsid + nohup: the engine outlives the test session that started it, so
# the next session finds it (and its image cache) ready. It gets none of
# this shell's other descriptors: a lock its caller holds (a flock taken
# around the test run) would stay held for as long as the engine runs.
setsid nohup python3 -c 'import os, sys; os.closerange(3, 1 << 16); os.execvp(sys.argv[1], sys.argv[1:])' \
    dockerd -H "$DOCKER_HOST" --data-root "$DATA_ROOT" \
    --pidfile "$pidfile" >>"$LOG" 2>&1 </dev/null &
i=0
until answers; do
    i=$((i + 1))
    if [ "$i" -gt 60 ]; then
        echo "engine.sh: dockerd did not answer within 30 s; see $LOG" >&2
        tail -20 "$LOG" >&2
        exit 1
    fi
    sleep 0.5
done
echo "$DOCKER_HOST"
