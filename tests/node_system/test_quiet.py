"""Quiet when idle (issue 13 item 4, issue 12: the path unit's trigger coalesced).

A node of its own, so no other test's runs wake it. Fossil opens the
repository read-write for every request, so each read fires the node's
path unit: while the node's service runs, ocx-wake@ is skipped by systemd
(no process); a burst of reads is one run of the service. Then, with
nothing arriving, nothing of OCX's starts at all.
"""
import os
import subprocess
import time
import urllib.request

import pytest

from ocx.node import config as node_config
from ocx.node.host_paths import awake_path

from .harness import ocx, systemctl, wait_for

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


def idle(service: str) -> bool:
    return systemctl("is-active", service).strip() != "active"


def hook_caught_up(config) -> bool:
    from ocx.fossil.repository import Repository

    with Repository(config.repository) as repository:
        return int(repository.config("hook-last-rcvid") or 0) >= repository.max_rcvid()


def test_reads_start_the_node_once_and_nothing_starts_while_nothing_arrives():
    ocx("node", "init", "--name", NAME, "--port", str(PORT))
    config = node_config.load(NAME)
    service, wake = f"ocx-node@{NAME}.service", f"ocx-wake@{NAME}.service"
    # Settle: a page of 200 lets Fossil's backoffice run its hook on what init wrote; then the node goes idle.
    wait_for(lambda: read(config.url, "/index") == 200, 30, 0.5, "the server")
    wait_for(lambda: hook_caught_up(config), 120, 0.5, "Fossil's hook to catch up")
    wait_for(lambda: idle(service), 60, 0.2, "the node idle")

    since = time.time()
    statuses = []
    for _ in range(12):
        statuses.append(read(config.url, "/"))
        time.sleep(0.25)  # reads spread over three seconds, not one burst
    assert set(statuses) == {302}
    wait_for(lambda: idle(service), 60, 0.2, "the node idle again")
    lines = journal_since(since, service, wake)
    node_starts = [line for line in lines if line.startswith("Started ocx-node@")]
    wake_starts = [line for line in lines if line.startswith("Starting ocx-wake@")]
    skipped = [line for line in lines if "was skipped because of an unmet condition" in line]
    assert len(node_starts) == 1, lines  # one run of the service took every read
    assert skipped and len(wake_starts) < len(statuses), lines  # reads meanwhile started no process
    assert not os.path.exists(awake_path(NAME))  # gone with the service

    since = time.time()
    time.sleep(QUIET_SECONDS)  # an absence is measured over an interval
    started = [line for line in journal_since(since, service, wake) if line.startswith(("Started", "Starting"))]
    assert started == []
