"""Runs as machines of systemd-machined (ocx/node_service/machines.py) on a real systemd and machined:
a run's unit that began while the node's service was down is registered by its sweep, with its
Description as the service field; ended, machined drops it; units of other nodes are left alone."""
from __future__ import annotations

import asyncio
import secrets
import subprocess
import time

import pytest

from ocx.node_service.machines import RunMachines, machine_service
from ocx.systemd import machines
from ocx.systemd.manager import Systemd

pytestmark = pytest.mark.systemd


class Node:
    """What RunMachines takes of the node's context: its server-code and its log."""

    def __init__(self, server_code: str):
        self.server_code = server_code
        self.lines: list[str] = []

    def log(self, message: str, *, record: str | None = None, priority: int = 6) -> None:
        self.lines.append(message)


def start(unit: str, description: str) -> None:
    subprocess.run(["systemd-run", "--quiet", f"--unit={unit}", "-p", "DynamicUser=yes", f"--description={description}",
                    "sleep", "300"], check=True, capture_output=True, timeout=60)


def listed() -> set[str]:
    done = subprocess.run(["machinectl", "list", "--no-legend", "--no-pager"], capture_output=True, text=True, timeout=60)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def wait_until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def test_a_sweep_registers_the_nodes_running_units_only_and_machined_drops_them_when_they_end():
    code, record, elsewhere = (secrets.token_hex(6) for _ in range(3))
    ours, theirs = f"ocx-{code}-{record}", f"ocx-{elsewhere}-{record}"
    description = f"OCX record {record}{'0' * 52} runner testrun as run-abc123"
    for unit in (ours, theirs):
        start(f"{unit}.service", description)
    node = Node(code + "0" * 52)

    async def sweep() -> tuple[str | None, list[machines.Machine]]:
        async with await Systemd.connect() as systemd:
            runs = RunMachines(node, systemd)
            await runs.sweep()
            await runs.sweep()  # a second sweep registers nothing twice
            return await machines.unit_of(systemd.bus, ours), await machines.machines(systemd.bus)
    try:
        took, held = asyncio.run(asyncio.wait_for(sweep(), 60))
        assert took == f"{ours}.service", node.lines
        found = {m.name: m for m in held}
        assert found[ours].machine_class == "container"
        assert found[ours].service == f"OCX record {record} runner testrun as run-abc123" == machine_service(description)
        assert theirs not in found  # another node's run is not this node's to list
    finally:
        for unit in (ours, theirs):
            subprocess.run(["systemctl", "stop", f"{unit}.service"], capture_output=True, timeout=60)
    wait_until(lambda: ours not in listed(), 30, f"machine {ours} gone with its unit")


def test_a_name_machined_holds_on_another_unit_is_unregistered_without_stopping_either_unit():
    """As a leader gone between the node's look and machined's, its number taken by another unit's
    process, would leave it: the node undoes it (UnregisterMachine) and stops nothing; its next sweep
    registers the name on its own unit."""
    code, record, other = (secrets.token_hex(6) for _ in range(3))
    ours, wrong = f"ocx-{code}-{record}", f"ocx-test-{other}"
    start(f"{ours}.service", f"OCX record {record} runner testrun as run-abc123")
    start(f"{wrong}.service", "another unit")
    node = Node(code + "0" * 52)

    async def mix_up() -> tuple[str | None, str | None]:
        async with await Systemd.connect() as systemd:
            wrong_pid = (await systemd.state(f"{wrong}.service")).main_pid
            await machines.register(systemd.bus, ours, "wrong", wrong_pid)  # the name on the wrong unit
            runs = RunMachines(node, systemd)
            await runs.register(f"{ours}.service")
            after_register = await machines.unit_of(systemd.bus, ours)
            await runs.sweep()
            return after_register, await machines.unit_of(systemd.bus, ours)
    try:
        after_register, after_sweep = asyncio.run(asyncio.wait_for(mix_up(), 60))
        assert after_register is None, node.lines
        assert any("registered for" in line and "unregistered" in line for line in node.lines), node.lines
        assert after_sweep == f"{ours}.service"
        states = subprocess.run(["systemctl", "is-active", f"{ours}.service", f"{wrong}.service"],
                                capture_output=True, text=True, timeout=60).stdout.split()
        assert states == ["active", "active"]
    finally:
        for unit in (ours, wrong):
            subprocess.run(["systemctl", "stop", f"{unit}.service"], capture_output=True, timeout=60)


def test_a_sweep_given_the_passs_listing_registers_from_it_and_forgets_what_it_lacks():
    """After the first, a sweep takes the run units the node's pass listed (PassReport.running), not a
    listing of its own: a unit missing from it is not registered, one in it is, and a name the
    listing no longer holds is forgotten (machined drops its machine with the unit)."""
    code, record = (secrets.token_hex(6) for _ in range(2))
    ours = f"ocx-{code}-{record}"
    start(f"{ours}.service", f"OCX record {record} runner testrun as run-abc123")
    node = Node(code + "0" * 52)

    async def sweeps() -> tuple[str | None, str | None, set[str], set[str]]:
        async with await Systemd.connect() as systemd:
            runs = RunMachines(node, systemd)
            await runs.sweep(frozenset())  # the pass saw none of them active
            before = await machines.unit_of(systemd.bus, ours)
            await runs.sweep(frozenset({f"{ours}.service"}))
            after, registered = await machines.unit_of(systemd.bus, ours), set(runs.registered)
            await runs.sweep(frozenset())
            return before, after, registered, set(runs.registered)
    try:
        before, after, registered, forgotten = asyncio.run(asyncio.wait_for(sweeps(), 60))
        assert before is None and after == f"{ours}.service", node.lines
        assert registered == {ours} and forgotten == set()
    finally:
        subprocess.run(["systemctl", "stop", f"{ours}.service"], capture_output=True, timeout=60)
    wait_until(lambda: ours not in listed(), 30, f"machine {ours} gone with its unit")
