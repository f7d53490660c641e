"""Runs cannot take the node or its server down with them (docs/security.md, 'The node and
the server, protected from runs').

ocx.slice holds every run; the node's services and the Fossil server live
outside it (system.slice), with memory protection of their own. Fifty runs
each allocating without limit (no `memory` budget) fill the slice, and the
kernel's OOM killer takes runs, one after another, never the server or the
node: meanwhile the server answers, records posted are answered, and every
one of the fifty is answered once.

On this shared test machine the slice's share is set small for the test
(SLICE_MEMORY, at run time); a host's is units/ocx.slice's 80% of memory.
The container's cgroups are v1 for memory (systemd 252 hybrid): MemoryMax
is the slice's memory.limit_in_bytes and its OOM kill stays inside it.
"""
from __future__ import annotations

import glob
import os
import subprocess
import time
import urllib.request

import pytest

from ocx.protocol import Outcome

from .harness import systemctl, wait_for

pytestmark = pytest.mark.systemd

RUNS = 50
SLICE_MEMORY = "3G"
SERVER_DEADLINE = 10.0  # seconds for one page of the server while the slice is full
ANSWER_DEADLINE = 120.0  # seconds for a record posted meanwhile to be answered
ALL_ANSWERED = 600.0  # seconds for all fifty, on a busy 2-core machine


def v1_memory(name: str) -> str | None:
    try:
        with open(f"/sys/fs/cgroup/memory/ocx.slice/{name}") as value:
            return value.read()
    except OSError:
        return None


@pytest.fixture
def small_slice():
    """The slice's share, small; afterwards every run the test left is killed before the
    host's share comes back, or they would go on eating up to it."""
    subprocess.run(["systemctl", "set-property", "--runtime", "ocx.slice", f"MemoryMax={SLICE_MEMORY}"],
                   check=True, timeout=60)
    yield
    subprocess.run(["systemctl", "kill", "--signal=KILL", "ocx.slice"], capture_output=True, timeout=120)  # runs only
    wait_for(lambda: not v1_memory("tasks") or not v1_memory("tasks").strip() or
             int(v1_memory("memory.usage_in_bytes") or 0) < 512 * 1024**2, 120, 0.5, what="the slice emptied")
    for drop_in in glob.glob("/run/systemd/system.control/ocx.slice.d/*MemoryMax*.conf"):
        os.unlink(drop_in)
    subprocess.run(["systemctl", "daemon-reload"], check=True, timeout=120)


def server_answers(url: str) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(url + "/index", timeout=SERVER_DEADLINE) as page:
        assert page.status == 200
    return time.monotonic() - started


def main_pid(unit: str) -> str:
    return systemctl("show", unit, "-p", "MainPID", "--value").strip()


def test_runs_that_take_all_memory_leave_the_server_and_the_node_answering(node, small_slice):
    server = f"ocx-fossil@{node.name}.service"
    server_pid = main_pid(server)
    eaters = [node.post(node.record(objective="eat memory", budget={"wall": "5m"})) for _ in range(RUNS)]
    # The slice is full: its limit was reached and the kernel killed inside it.
    wait_for(lambda: int(v1_memory("memory.failcnt") or 0) > 0, ALL_ANSWERED, 1.0, what="the slice at its limit")
    slowest = max(server_answers(node.url) for _ in range(5))
    # A record posted now: refused by the node itself (its user holds admin); one that runs, in the full slice.
    started = time.monotonic()
    refused = node.post(node.record(user=node.admin.name, objective="exit 0"))
    runs = node.post(node.record(objective="exit 0"))
    assert node.response(refused, ANSWER_DEADLINE).outcome is Outcome.refused
    refused_after = time.monotonic() - started
    slowest = max(slowest, server_answers(node.url))
    # Every one of the fifty answered, once (Node.response asserts one), whatever ended it, and the run
    # posted meanwhile too: its unit shares the full slice, so it is answered once the slice has room.
    deadline = time.monotonic() + ALL_ANSWERED
    outcomes = [node.response(eater, max(1.0, deadline - time.monotonic())).outcome for eater in eaters]
    assert node.response(runs, max(ANSWER_DEADLINE, deadline - time.monotonic())).outcome is not None
    slowest = max(slowest, server_answers(node.url))
    print(f"\n{RUNS} runs allocating in a {SLICE_MEMORY} slice: outcomes "
          f"{ {o.value: outcomes.count(o) for o in set(outcomes)} }, slowest server page {slowest:.2f} s, "
          f"a record refused meanwhile posted and answered in {refused_after:.1f} s, "
          f"slice failcnt {v1_memory('memory.failcnt').strip()}")
    # The server was never the one killed or restarted; the node's root service is outside the slice.
    assert main_pid(server) == server_pid
    assert systemctl("show", server, "-p", "NRestarts", "--value").strip() == "0"
    for unit in (server, f"ocx-node@{node.name}.service"):  # system.slice's, each in its template's slice
        assert systemctl("show", unit, "-p", "Slice", "--value").strip().startswith("system-"), unit
