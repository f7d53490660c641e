#!/usr/bin/env bash
# The whole test suite from nothing: set the host up, make sure a Docker
# engine answers (the systemd tests run in a container, since PID 1 here is
# not systemd), then run pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash contrib/setup.sh --test
if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]; then
    DOCKER_HOST=$(sh tests/container/engine.sh)
    export DOCKER_HOST
fi
echo "run: set-up took $(( $(date +%s) - start )) s" >&2
# The coverage ratchet measures a run of the whole suite and fails it below
# tests/coverage-floor (tests/coverage_ratchet.py); a run of a few tests
# is not measured.
exec .venv/bin/python -m pytest -p no:cacheprovider -p tests.coverage_ratchet -p tests.hang_report "$@"
