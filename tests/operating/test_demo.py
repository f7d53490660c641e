"""`ocx demo` where PID 1 is systemd (in the test container): the node
`demo` is made, its first release is this working tree's, staged and accepted
by `ocx release` (D45, D46), so its services run from releases/ID; what it made
is printed, and a rerun changes nothing."""
from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ocx.node.host_paths import RELEASES_DIRECTORY
from ocx.node.releases.serving import LAUNCHER
from tests.container.systemd_container import WHEELHOUSE_INSIDE
from tests.node_system.harness import back_on_the_installation

pytestmark = pytest.mark.systemd

OCX = ["/opt/ocx/venv/bin/ocx"]
ROOT = RELEASES_DIRECTORY
SETTLE_SECONDS = 120


@pytest.fixture
def releases_restored():
    """The demo accepts the container's first release; afterwards the node is left as every other test
    finds it (the suite shares one container): no release current, the services on the installation."""
    if not Path(WHEELHOUSE_INSIDE).is_dir():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE_INSIDE}: tests/container/build-image.sh makes it on the host")
    assert not os.path.lexists(f"{ROOT}/current"), "a release is current already on the test node"
    try:
        yield
    finally:
        back_on_the_installation()


def shown(unit: str, prop: str) -> str:
    return subprocess.run(["systemctl", "show", unit, "-p", prop, "--value"], capture_output=True, text=True,
                          check=True).stdout.strip()


def main_program(unit: str) -> str | None:
    """The program the unit's main process runs (its argv[0]), None when it runs none."""
    pid = shown(unit, "MainPID")
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() if pid not in ("", "0") else None
    except OSError:  # it ended meanwhile
        return None


def running_from(unit: str, release: str) -> bool:
    """Bounded wait for UNIT's main process to run RELEASE's own python (a restart may be settling)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        if main_program(unit) == f"{ROOT}/{release}/bin/python":
            return True
        time.sleep(0.2)
    return False


def demo(*args: str) -> str:
    done = subprocess.run([*OCX, "demo", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_demo_prints_what_it_made_and_a_rerun_changes_nothing(releases_restored):
    first = demo("--container", "ocx-demo", "--publish", "8090", "--wheelhouse", WHEELHOUSE_INSIDE)
    for said in ("http://127.0.0.1:8080", "as Unix account fossil, not root",
                 "admin login     admin, password in /etc/ocx/demo.admin-password",
                 "node user       ocx-node, password in /etc/ocx/demo.node-password",
                 "systemctl list-units 'ocx-*'", "journalctl -u ocx-node@demo",
                 "docker exec -it ocx-demo bash", "ocx-publish.socket active"):
        assert said in first, f"{said!r} not in:\n{first}"
    # The demonstration ran end to end: the node judged the check-in and answered the session.
    assert "ci verdict      pass: demo CI: 2 files checked out, all readable (against " in first, first
    assert "by ocx-node)" in first
    assert "response        exited: exit 0 after" in first, first
    assert "journalctl -u ocx-" in first
    # The relay answers for the published port as the server itself does.
    with urllib.request.urlopen("http://127.0.0.1:8090/", timeout=60) as reply:
        assert reply.status == 200
    # The first release: this working tree's wheel, staged, smoked and accepted; the node's services
    # run from its own directory through the launcher (D45, D46).
    release = os.readlink(f"{ROOT}/current")
    assert f"next: {release}" in first and f"accepted {release}: current {release}, previous none" in first, first
    assert "smoke version: passed: ocx 0.1.0" in first, first
    assert f"release         {release} current" in first, first
    services = ["ocx-node@demo.service", *(f"ocx-{kind}@demo.service" for kind in ("page", "tools", "follow")
                                            if shown(f"ocx-{kind}@demo.service", "ActiveState") == "active")]
    for unit in services:
        assert f"path={LAUNCHER} " in shown(unit, "ExecStart"), unit
        assert running_from(unit, release), (unit, main_program(unit))
    again = demo("--container", "ocx-demo", "--publish", "8090", "--wheelhouse", WHEELHOUSE_INSIDE)
    assert "already set up, nothing changed" in again and "made:" not in again, again
    assert f"Release {release} is current already: nothing staged" in again and "next: " not in again, again
    assert os.readlink(f"{ROOT}/current") == release
    # Run again, the demonstration goes on from the branch it made.
    assert again.count("ci verdict      pass:") == 1 and "response        exited:" in again, again
