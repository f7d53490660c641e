"""What a run's stop step asks of PID 1 at a run's end (ocx/systemd/system_state.py, D4), on a real
systemd: over its private socket the job on a unit and the manager's state read as `systemctl` reads
them, a stop job root queued told from none; asked by a process that is not root (no private
socket), `systemctl` answers the same."""
from __future__ import annotations

import secrets
import subprocess
import sys
import time

import pytest

from ocx.systemd.sd_bus import SystemBus
from ocx.systemd.system_state import _over_private_socket, end_facts, job_on, stopping, system_state

pytestmark = pytest.mark.systemd


def run(*argv: str) -> None:
    subprocess.run(["systemd-run", "--quiet", "--no-block", *argv], check=True, capture_output=True, timeout=60)


def until(check, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


def stop(unit: str) -> None:
    subprocess.run(["systemctl", "kill", "--signal=SIGKILL", unit], capture_output=True, timeout=60)
    subprocess.run(["systemctl", "stop", unit], capture_output=True, timeout=60)


def test_a_unit_starting_has_a_start_job_and_one_running_none():
    starting, running = (f"ocx-test-state-{secrets.token_hex(4)}.service" for _ in range(2))
    run(f"--unit={starting}", "-p", "ExecStartPre=/bin/sleep 30", "/bin/sleep", "300")
    run(f"--unit={running}", "/bin/sleep", "300")
    try:
        until(lambda: job_on(starting) == "start", "start job seen by systemctl")
        until(lambda: subprocess.run(["systemctl", "is-active", running], capture_output=True,
                                     text=True).stdout.strip() == "active", "running unit")
        assert _over_private_socket(starting) == (system_state(), "start")
        assert end_facts(starting) == (False, "start")
        assert _over_private_socket(running) == (system_state(), "")
        assert end_facts(running) == (False, None) and job_on(running) is None
        assert stopping() is False
    finally:
        stop(starting)
        stop(running)


def test_a_stop_job_root_queued_is_told_as_stop():
    unit = f"ocx-test-state-{secrets.token_hex(4)}.service"
    # Its stop waits on ExecStop for a while: the stop job stays queued meanwhile, as a stop step sees it.
    run(f"--unit={unit}", "-p", "ExecStop=/bin/sleep 30", "/bin/sleep", "300")
    try:
        until(lambda: subprocess.run(["systemctl", "is-active", unit], capture_output=True,
                                     text=True).stdout.strip() == "active", "running unit")
        subprocess.run(["systemctl", "stop", "--no-block", unit], check=True, capture_output=True, timeout=60)
        until(lambda: job_on(unit) == "stop", "stop job seen by systemctl")
        assert end_facts(unit) == (False, "stop")
    finally:
        stop(unit)


def test_one_not_root_has_no_private_socket_and_gets_systemctl_s_answer():
    script = ("import sys; sys.path[:0] = " + repr(sys.path) + "\n"
              "from ocx.systemd.system_state import _over_private_socket, end_facts\n"
              "print(_over_private_socket('dbus.service'), end_facts('dbus.service'))")
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-I", "-c",
                           script], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "(False,", "None)"]  # no private socket; systemctl's: running, no job
    with SystemBus(private=True) as bus:  # root, here: the same socket answers
        assert bus.properties([("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "SystemState",
                                b"s")]) == [system_state()]
