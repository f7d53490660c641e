"""What the console reads of a running unit (docs/console.md, 'In work'), on a real systemd: its
state and start over libsystemd's sd-bus, its CPU time, memory and
processes from its cgroup, what it printed from the journal. No mocks.
"""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from ocx.systemd import journal_tail
from ocx.systemd.manager import Systemd
from ocx.systemd.sd_bus import BusUnreadable, SystemBus
from ocx.systemd.unit_figures import read_units
from ocx.systemd.units import TransientService

pytestmark = pytest.mark.systemd

PY = "/usr/bin/python3"
MIB = 1024 * 1024
# Holds 48 MiB, runs two children, prints a numbered line and burns CPU until stopped.
BUSY = """
import os, sys, time
hoard = bytearray(48 * 1024 * 1024)
for i in range(0, len(hoard), 4096):
    hoard[i] = 1
kids = [os.fork() for _ in range(2)]
if 0 in kids:
    time.sleep(3600)
    sys.exit(0)
n = 0
while True:
    n += 1
    print(f"tick {n}", flush=True)
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        pass
"""


def start(tag: str, argv: list[str]) -> str:
    name = f"ocx-test-{tag}-{uuid.uuid4().hex[:12]}.service"

    async def go():
        async with await Systemd.connect() as systemd:
            await systemd.start(TransientService(name=name, argv=argv, memory_max=256 * MIB, tasks_max=16,
                                                 runtime_max_sec=120, description=f"OCX test {tag}",
                                                 standard_output="journal", standard_error="journal",
                                                 add_ref=False))
    asyncio.run(asyncio.wait_for(go(), 30))
    return name


def stop(name: str) -> None:
    async def go():
        async with await Systemd.connect() as systemd:
            await systemd.stop(name)
    asyncio.run(asyncio.wait_for(go(), 30))


def until(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s")


def figures_of(name: str):
    found = [unit for unit in read_units([name]) if unit.name == name]
    return found[0] if found else None


def test_a_running_unit_has_its_start_cpu_memory_and_processes():
    before = time.time()
    name = start("figures", [PY, "-c", BUSY])
    try:
        first = until(lambda: (f := figures_of(name)) and f.usage.tasks and f.usage.tasks >= 3 and f.cpu_seconds
                      and f.usage.memory and f.usage.memory >= 48 * MIB and f, "three processes holding 48 MiB")
        assert (first.active_state, first.sub_state, first.live) == ("active", "running", True)
        assert first.description == "OCX test figures"
        assert before - 1 <= first.active_since <= time.time()
        assert first.usage.memory_peak is None or first.usage.memory_peak >= first.usage.memory
        assert first.usage.tasks_peak is None or first.usage.tasks_peak >= first.usage.tasks
        # It burns CPU while it runs: a later look has counted more (a busy host gives it less, never none).
        later = until(lambda: (f := figures_of(name)) and f.cpu_seconds > first.cpu_seconds + 0.1 and f,
                      "more CPU time counted")
        assert later.active_since == first.active_since
    finally:
        stop(name)
    until(lambda: (gone := figures_of(name)) is None or not gone.live, "its end")


def test_only_the_units_a_pattern_names_are_read():
    mine, other = start("mine", [PY, "-c", BUSY]), start("other", [PY, "-c", BUSY])
    try:
        names = {unit.name for unit in read_units([mine.removesuffix(".service") + "*"])}
        assert mine in names and other not in names
    finally:
        stop(mine)
        stop(other)


def test_many_properties_asked_at_once_come_back_in_order():
    name = start("props", [PY, "-c", BUSY])
    try:
        until(lambda: (f := figures_of(name)) and f.active_since, "its start")
        with SystemBus() as bus:
            asked = [(name, "org.freedesktop.systemd1.Unit", "Id", b"s"),
                     (name, "org.freedesktop.systemd1.Service", "ControlGroup", b"s"),
                     ("ocx-test-none-000000000000.service", "org.freedesktop.systemd1.Unit", "ActiveState", b"s"),
                     (name, "org.freedesktop.systemd1.Unit", "NoSuchProperty", b"s")] * 50
            values = bus.properties(asked)
        assert values[:4] == [name, f"/ocx.slice/{name}", "inactive", None]
        assert values == values[:4] * 50
    finally:
        stop(name)


def test_what_a_unit_printed_is_read_back_newest_last():
    name = start("printed", [PY, "-c", BUSY])
    try:
        lines = until(lambda: (found := journal_tail.printed(name, 5)) and len(found) == 5 and found,
                      "five lines in the journal")
        numbers = [int(line.text.split()[1]) for line in lines]
        assert numbers == sorted(numbers) and numbers[-1] - numbers[0] == 4
        later = until(lambda: (found := journal_tail.printed(name, 5)) and
                      int(found[-1].text.split()[1]) > numbers[-1] and found, "a newer line")
        assert len(later) == 5 and all(line.at >= lines[0].at for line in later)
    finally:
        stop(name)


def test_a_unit_that_never_ran_printed_nothing():
    assert journal_tail.printed(f"ocx-test-never-{uuid.uuid4().hex[:12]}.service") == []


def test_no_system_bus_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    with pytest.raises(BusUnreadable, match="system bus"):
        SystemBus()
