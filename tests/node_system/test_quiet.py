"""Quiet when idle (D26: the trigger coalesced; docs/node.md, 'The node's service up': the service stays up).

A node of its own, so no other test's runs wake it. Once started, the
node's service stays up and waits on its socket and the repository file
with no timeout (D26). Fossil opens the repository read-write for every
request, so each read fires the node's path unit: systemd skips ocx-wake@
while the service is up (no process), and the service, seeing that the
read wrote nothing, runs no pass. With nothing arriving, nothing of OCX's
runs or starts; a write of the repository is seen by the same process.
"""
import os
import subprocess
import time
import urllib.request

import pytest

from ocx.node import config as node_config
from ocx.node.host_paths import awake_path

from .harness import node_idle, ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd

NAME, PORT = "quiettest", 8192
QUIET_SECONDS = 20.0


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args, **_kwargs):
        return None


def read(url: str, path: str) -> int:
    """One request; `/` answers 302, which starts no backoffice (fossil-facts.md) and so no hook."""
    try:
        with urllib.request.build_opener(_Stay).open(url + path, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as answer:
        return answer.code


def journal_since(since: float, *units: str) -> list[str]:
    args = [a for unit in units for a in ("-u", unit)]
    return subprocess.run(["journalctl", "--since", f"@{since:.3f}", "-o", "cat", "--no-pager", *args],
                          capture_output=True, text=True).stdout.splitlines()


def hook_caught_up(config) -> bool:
    from ocx.fossil.repository import Repository

    with Repository(config.repository) as repository:
        return int(repository.config("hook-last-rcvid") or 0) >= repository.max_rcvid()


def up(service: str) -> tuple[str, str]:
    """The service's process and invocation: the same pair means it never stopped."""
    shown = systemctl("show", service, "-p", "MainPID", "-p", "InvocationID")
    values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    return values.get("MainPID", ""), values.get("InvocationID", "")


def settle(config, service: str) -> None:
    """Up, idle, and no pass for three seconds (the hook's last run, its backoffice's lease, may wake it once more)."""
    wait_for(lambda: read(config.url, "/index") == 200, 30, 0.5, "the server")
    for _ in range(10):
        wait_for(lambda: hook_caught_up(config), 120, 0.5, "Fossil's hook to catch up")
        wait_for(lambda: systemctl("is-active", service).strip() == "active" and node_idle(NAME), 60, 0.2,
                 "the node up and idle")
        settling = time.time()
        time.sleep(3)
        if node_idle(NAME) and not [line for line in journal_since(settling, service) if line.startswith("pass ")]:
            return
    raise AssertionError("the node never settled: " + "\n".join(journal_since(settling - 60, service)))


def test_the_node_stays_up_and_nothing_runs_or_starts_while_nothing_arrives():
    ocx("node", "init", "--name", NAME, "--port", str(PORT))
    config = node_config.load(NAME)
    service, wake = f"ocx-node@{NAME}.service", f"ocx-wake@{NAME}.service"
    settle(config, service)
    before = up(service)

    since = time.time()
    statuses = []
    for _ in range(12):
        statuses.append(read(config.url, "/"))
        time.sleep(0.25)  # reads spread over three seconds, not one burst
    assert set(statuses) == {302}
    time.sleep(QUIET_SECONDS)  # an absence is measured over an interval
    lines = journal_since(since, service, wake)
    started = [line for line in lines if line.startswith(("Started", "Starting"))]
    skipped = [line for line in lines if "was skipped because of an unmet condition" in line]
    passes = [line for line in lines if line.startswith("pass ")]
    assert started == [], lines  # no process: the wake skipped, the service not started again
    assert skipped, lines  # the reads fired the path unit
    assert passes == [], lines  # and the service, up all along, ran no pass for them
    assert up(service) == before and os.path.isdir(awake_path(NAME))
    assert node_idle(NAME)

    # A write of the repository (a CLI write: no hook, no poke) is seen by the same process.
    since = time.time()
    subprocess.run(["fossil", "setting", "binary-glob", "*.quiet", "-R", config.repository],
                   check=True, capture_output=True, env={**os.environ, "USER": "root"})
    wait_for(lambda: [line for line in journal_since(since, service) if line.startswith("pass ")], 60, 0.2,
             "a pass for the write")
    assert up(service) == before
    assert not [line for line in journal_since(since, service, wake) if line.startswith(("Started", "Starting"))]
