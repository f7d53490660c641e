"""Transient services on a real systemd, through ocx.systemd only (no mocks).

Written for a host whose PID 1 is systemd; tests/conftest.py runs them in
the test container elsewhere. Each test opens its own bus connection
(closing it drops the AddRef references it holds).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
import uuid

import pytest

from ocx.systemd import stoppost
from ocx.systemd.manager import Systemd
from ocx.systemd.units import TransientService, cause

pytestmark = pytest.mark.systemd

PY = "/usr/bin/python3"      # Debian's, outside any venv: the run's program
MIB = 1024 * 1024

# From inside the sandbox: /usr must be read-only (ProtectSystem=strict,
# D16) and the only interface loopback (PrivateNetwork, D34).
PROBE = """
import errno, socket, sys
try:
    open("/usr/ocx-probe", "w")
    sys.exit(10)
except OSError as e:
    if e.errno != errno.EROFS:
        sys.exit(11)
names = [n for _, n in socket.if_nameindex()]
sys.exit(0 if names == ["lo"] else 12)
"""


def name(tag: str) -> str:
    return f"ocx-test-{tag}-{uuid.uuid4().hex[:12]}.service"


def sandboxed(tag: str, argv: list[str], **kw) -> TransientService:
    base = dict(memory_max=128 * MIB, tasks_max=32, runtime_max_sec=30,
                protect_system="strict", private_network=True,
                description=f"OCX test {tag}")
    base.update(kw)
    return TransientService(name=name(tag), argv=argv, **base)


def arun(coro, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.mark.parametrize("argv,expected", [
    ([PY, "-c", PROBE], ("success", "exited", 0)),
    (["/bin/sh", "-c", "exit 3"], ("exit-code", "exited", 3)),
])
def test_a_sandboxed_run_ends_as_its_program_exits(argv, expected):
    async def go():
        async with await Systemd.connect() as sd:
            run = await sd.run(sandboxed("exit", argv))
            end = await run.ended(timeout=30)
            # AddRef kept even a unit that exited 0 readable (notes).
            st = await run.state()
            return end, st
    end, st = arun(go())
    assert (end.result, end.code, end.status) == expected
    assert end.active_state == ("inactive" if expected[0] == "success" else "failed")
    assert st is not None and st.active_state == end.active_state
    assert cause(end) == "exit"


def test_runtime_max_ends_a_run_with_result_timeout():
    async def go():
        async with await Systemd.connect() as sd:
            run = await sd.run(sandboxed("wall", ["/bin/sleep", "30"], runtime_max_sec=1))
            t0 = time.monotonic()
            end = await run.ended(timeout=20)
            return end, time.monotonic() - t0
    end, took = arun(go())
    assert end.result == "timeout"
    assert end.code == "killed" and end.signal_name == "SIGTERM"
    assert cause(end) == "timeout"  # RuntimeMaxSec ended it, not its own end 30 s later: no upper figure
    assert 0.8 < took


def test_the_unit_lives_in_ocx_slice_with_its_limits():
    async def go():
        async with await Systemd.connect() as sd:
            svc = sandboxed("props", ["/bin/sleep", "30"], cpu_quota=0.5)
            run = await sd.run(svc)
            await wait_main_pid(sd, svc.name)
            path = await sd.bus.get_unit(svc.name)
            props = await sd.bus.get_all(path, "org.freedesktop.systemd1.Service")
            await sd.stop(svc.name)
            end = await run.ended(timeout=20)
            return props, end
    props, end = arun(go())
    assert props["Slice"] == "ocx.slice"
    assert props["MemoryMax"] == 128 * MIB and props["TasksMax"] == 32
    assert props["RuntimeMaxUSec"] == 30_000_000
    assert props["CPUQuotaPerSecUSec"] == 500_000
    assert props["ProtectSystem"] == "strict" and props["PrivateNetwork"] is True
    # StopUnit: success, the program killed by TERM (notes).
    assert (end.result, end.code, end.signal_name) == ("success", "killed", "SIGTERM")


async def wait_main_pid(sd: Systemd, unit: str, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = await sd.state(unit)
        if st and st.active_state == "active" and st.main_pid:
            return st.main_pid
        await asyncio.sleep(0.02)
    raise AssertionError(f"{unit} never got a main process")


def test_a_memory_kill_is_told_from_a_plain_kill_9(tmp_path_factory):
    out = tempfile.mkdtemp(prefix="ocx-stoppost-", dir="/var/tmp")
    hog_report, plain_report = f"{out}/hog.json", f"{out}/plain.json"
    hog_prog = "b = []\nwhile True:\n    b.append(b'x' * (8 << 20))\n"

    async def go():
        async with await Systemd.connect() as sd:
            hog = sandboxed("memory", [PY, "-c", hog_prog], memory_max=64 * MIB,
                            exec_stop_post=[stoppost.command(hog_report, sys.executable)])
            plain = sandboxed("kill9", ["/bin/sleep", "300"], memory_max=64 * MIB,
                              exec_stop_post=[stoppost.command(plain_report, sys.executable)])
            hog_run = await sd.run(hog)
            plain_run = await sd.run(plain)
            os.kill(await wait_main_pid(sd, plain.name), signal.SIGKILL)
            return await hog_run.ended(timeout=30), await plain_run.ended(timeout=30)
    hog_end, plain_end = arun(go())
    hog_r, plain_r = stoppost.read(hog_report), stoppost.read(plain_report)
    # What systemd says is the same for both on cgroup v1 (notes)…
    for end in (hog_end, plain_end):
        assert end.code == "killed" and end.signal_name == "SIGKILL"
    assert plain_end.result == "signal"
    assert hog_end.result in ("signal", "oom-kill")
    # …the unit's memory cgroup, read by its stop-post, tells them apart.
    assert hog_r.oom_killed and not plain_r.oom_killed
    assert hog_r.memory.max_usage is None or hog_r.memory.max_usage >= 60 * MIB
    assert cause(hog_end, hog_r.oom_killed) == "memory"
    assert cause(plain_end, plain_r.oom_killed) == "signal"
    # The stop-post also saw systemd's own view of the end (D4).
    assert (hog_r.code, plain_r.code) == ("killed", "killed")
    assert plain_r.status == "KILL" and plain_r.result == "signal"


def test_cpu_time_of_a_running_unit_increases():
    burn = "while True:\n    pass\n"

    async def go():
        async with await Systemd.connect() as sd:
            svc = sandboxed("cpu", [PY, "-c", burn], runtime_max_sec=20)
            run = await sd.run(svc)
            await wait_main_pid(sd, svc.name)
            # Sampled until 0.3 s of CPU were counted, within a deadline a busy
            # machine leaves room for: the figure must grow, never how fast.
            samples = [await sd.cpu_usec(svc.name)]
            deadline = time.monotonic() + 60
            while (samples[-1] or 0) - (samples[0] or 0) <= 300_000 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                samples.append(await sd.cpu_usec(svc.name))
            st = await sd.state(svc.name)
            await sd.stop(svc.name)
            await run.ended(timeout=20)
            return samples, st
    samples, st = arun(go())
    assert all(s is not None for s in samples), samples
    assert all(b >= a for a, b in zip(samples, samples[1:])), samples
    assert samples[-1] - samples[0] > 300_000, samples
    assert st.control_group and st.control_group.startswith("/ocx.slice/")


FORKS = """
import errno, os, sys, time
kids, refused = [], 0
for _ in range(12):
    try:
        pid = os.fork()
    except OSError as e:
        refused += e.errno == errno.EAGAIN
        continue
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
sys.exit(0 if refused and len(kids) < 12 else 1)
"""


def test_tasks_max_makes_forks_fail_but_the_run_goes_on_d17():
    async def go():
        async with await Systemd.connect() as sd:
            run = await sd.run(sandboxed("tasks", [PY, "-c", FORKS], tasks_max=5))
            return await run.ended(timeout=30)
    end = arun(go())
    assert (end.result, end.code, end.status) == ("success", "exited", 0)
