"""The bus and journal parts of ocx.systemd on a real systemd (no mocks)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid

import pytest

from ocx.systemd import journal
from ocx.systemd.manager import Systemd
from ocx.systemd.units import TransientService

pytestmark = pytest.mark.systemd


def name(tag: str) -> str:
    return f"ocx-test-{tag}-{uuid.uuid4().hex[:12]}.service"


def arun(coro, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def until(check, timeout: float = 30.0) -> bool:
    """Whether CHECK (awaited) came true within TIMEOUT seconds: what systemd does next is an
    event a busy machine may make late, so the deadline is in seconds, not in polls."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def test_a_pipe_passed_as_standard_output_gets_what_the_unit_prints():
    r, w = os.pipe()

    async def go():
        async with await Systemd.connect(negotiate_unix_fd=True) as sd:
            run = await sd.run(TransientService(
                name=name("fd"), argv=["/bin/echo", "through the pipe"],
                standard_output=w, private_network=True))
            os.close(w)     # systemd holds its own copy now
            return await run.ended(timeout=20)
    end = arun(go())
    assert (end.result, end.status) == ("success", 0)
    with os.fdopen(r) as f:
        assert f.read() == "through the pipe\n"


def test_add_ref_keeps_an_ended_unit_until_release():
    async def go():
        async with await Systemd.connect() as sd:
            svc = TransientService(name=name("ref"), argv=["/bin/true"])
            run = await sd.run(svc)
            await run.ended(timeout=20)
            kept = await sd.state(svc.name)
            kept_active = await sd.active_state(svc.name)  # the one property, as state() says it
            await sd.release(svc.name)
            async def gone() -> bool:
                return await sd.state(svc.name) is None

            await until(gone)
            return kept, kept_active, await sd.state(svc.name), await sd.active_state(svc.name)
    kept, kept_active, after, after_active = arun(go())
    assert kept is not None and kept.active_state == "inactive" == kept_active
    assert after is None and after_active is None


def test_watching_a_unit_that_runs_already_sees_its_end():
    async def go():
        async with await Systemd.connect() as starter, await Systemd.connect() as watcher:
            svc = TransientService(name=name("watch"), argv=["/bin/sleep", "30"])
            await starter.run(svc)
            async def active() -> bool:
                return bool((st := await watcher.state(svc.name)) and st.active_state == "active")

            assert await until(active), "the unit never became active"
            run = await watcher.watch(svc.name)
            await starter.stop(svc.name)
            return await run.ended(timeout=20)
    end = arun(go())
    assert (end.result, end.code, end.signal_name) == ("success", "killed", "SIGTERM")


def test_a_missing_program_ends_with_203():
    async def go():
        async with await Systemd.connect() as sd:
            run = await sd.run(TransientService(name=name("missing"), argv=["/nonexistent/x"]))
            return await run.ended(timeout=20)
    end = arun(go())
    assert (end.result, end.code, end.status) == ("exit-code", "exited", 203)


def test_a_unit_of_the_same_name_is_not_started_twice_d5():
    from ocx.systemd.bus import BusError

    async def go():
        async with await Systemd.connect() as sd:
            svc = TransientService(name=name("twice"), argv=["/bin/sleep", "30"])
            await sd.run(svc)
            with pytest.raises(BusError) as e:
                await sd.run(svc)
            await sd.stop(svc.name)
            return e.value.name
    assert arun(go()) == "org.freedesktop.systemd1.UnitExists"


@pytest.mark.parametrize("via", ["pystemd", "socket"])
def test_journal_lines_carry_ocx_fields(via):
    record = uuid.uuid4().hex
    how = journal.send(f"hello {via}", OCX_RECORD=record,
                       socket_path=journal.SOCKET if via == "socket" else None)
    assert how == via
    deadline = time.monotonic() + 30  # journald writes it when it gets to it
    while not (out := subprocess.run(["journalctl", f"OCX_RECORD={record}", "-o", "json", "--no-pager"],
                                     capture_output=True, text=True).stdout).strip():
        assert time.monotonic() < deadline, "the line never reached the journal"
        time.sleep(0.1)
    entry = json.loads(out.splitlines()[0])
    assert entry["MESSAGE"] == f"hello {via}" and entry["SYSLOG_IDENTIFIER"] == "ocx"


def test_units_lists_the_running_units_a_pattern_names_and_no_others():
    stem = f"ocx-test-list-{uuid.uuid4().hex[:12]}"
    sleeping, other = f"{stem}-a.service", name("unlisted")

    async def go():
        async with await Systemd.connect() as sd:
            for unit in (sleeping, other):
                await sd.start(TransientService(name=unit, argv=["/bin/sleep", "60"]))
            async def running() -> bool:
                return (await sd.state(sleeping)).active_state == "active"

            await until(running)
            listed = await sd.units([f"{stem}.service", f"{stem}-*.service"])
            for unit in (sleeping, other):
                await sd.stop(unit)
            return listed
    listed = arun(go())
    assert [(u.name, u.active_state, u.sub_state) for u in listed] == [(sleeping, "active", "running")]
