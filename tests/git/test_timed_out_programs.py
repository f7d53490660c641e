"""A timed-out `git` or `fossil` never holds the node past its bound, even when a process it started
left its session and keeps its pipes open (ocx/fossil/program.py's end_session, which run_git and
run_fossil call on a timeout). Real git runs the escape itself, through an alias of `!` (a shell command
git starts); end_session is also tested on a program of the test's own, the case Fossil would be in."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ocx.fossil.program import end_session
from ocx.git.program import GitError, run_git

ESCAPED_SLEEP = 300  # seconds the escaped process would hold the pipes: the old wait's length
DEADLINE = 90.0  # far above the call's timeout plus AFTER_KILL_SECONDS, far below ESCAPED_SLEEP
TIMEOUT = 3.0


def escaping(marker: Path) -> str:
    """Shell text that starts a process in a session of its own (it keeps the output pipes), waits until
    that one wrote its pid to MARKER, then sleeps in the caller's place."""
    return (f"setsid sh -c 'echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep {ESCAPED_SLEEP}' & "
            f"while [ ! -s {marker} ]; do sleep 0.05; done; exec sleep {ESCAPED_SLEEP}")


def finished_within(call: Callable[[], object]) -> BaseException | None:
    """CALL run off this thread; the exception it raised, after asserting it ended within DEADLINE."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert not thread.is_alive(), f"still waiting after {DEADLINE:g} s: the escaped process held the caller"
    return raised[0] if raised else None


def kill_escaped(marker: Path) -> None:
    """The escaped process, asserted to have left the program's session and to live still (the case
    tested), then killed."""
    pid = int(marker.read_text())
    try:
        assert os.getsid(pid) == pid
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_timed_out_git_returns_though_a_process_it_started_left_its_session(tmp_path):
    marker = tmp_path / "escaped.pid"
    started = time.monotonic()
    try:
        error = finished_within(lambda: run_git(["-c", f"alias.hang=!{escaping(marker)}", "hang"],
                                                home=tmp_path / "home", timeout=TIMEOUT))
        assert isinstance(error, GitError), error
        assert error.returncode == -1 and "timed out after 3 s" in error.stderr
        assert time.monotonic() - started >= TIMEOUT
    finally:
        if marker.exists():
            kill_escaped(marker)


def test_a_killed_session_is_not_waited_for_past_its_bound_when_one_left_it(tmp_path):
    """As `fossil` would be, were anything it started to leave its session (run_fossil)."""
    marker = tmp_path / "escaped.pid"
    process = subprocess.Popen(["/bin/sh", "-c", escaping(marker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        with process:
            deadline = time.monotonic() + DEADLINE
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert finished_within(lambda: end_session(process)) is None
        assert process.returncode == -signal.SIGKILL
    finally:
        if marker.exists():
            kill_escaped(marker)


def test_a_timed_out_programs_own_session_is_killed_whole(tmp_path):
    """What stays in the session (a helper such as git-remote-http) is killed with the program."""
    marker = tmp_path / "helper.pid"
    script = tmp_path / "program"
    script.write_text("#!/bin/sh\n"
                      f"sh -c 'echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep {ESCAPED_SLEEP}' &\n"
                      f"exec sleep {ESCAPED_SLEEP}\n")
    script.chmod(0o755)
    process = subprocess.Popen([str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    with process:
        deadline = time.monotonic() + DEADLINE
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        helper = int(marker.read_text())
        end_session(process)
    assert process.returncode == -signal.SIGKILL
    # The helper was killed too: once its parent (the program) is gone, init collects it.
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            os.kill(helper, 0)
        except ProcessLookupError:
            break
        try:
            state = Path(f"/proc/{helper}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":  # killed, not yet collected
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the helper {helper} outlived its session's kill")
