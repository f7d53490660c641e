"""`ocx demo` where PID 1 is systemd (in the test container): the node
`demo` is made, what it made is printed, and a rerun changes nothing."""
from __future__ import annotations

import subprocess
import urllib.request

import pytest

pytestmark = pytest.mark.systemd

OCX = ["/opt/ocx/venv/bin/ocx"]


def demo(*args: str) -> str:
    done = subprocess.run([*OCX, "demo", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_demo_prints_what_it_made_and_a_rerun_changes_nothing():
    first = demo("--container", "ocx-demo", "--publish", "8090")
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
    again = demo("--container", "ocx-demo", "--publish", "8090")
    assert "already set up, nothing changed" in again and "made:" not in again, again
    # Run again, the demonstration goes on from the branch it made.
    assert again.count("ci verdict      pass:") == 1 and "response        exited:" in again, again
