"""systemd gone while a session runs: the container restarts, and the boot check answers `lost` (C4, D6).

Driven from the host: the container itself is what goes away.
"""
import json
import os
import shutil
import time

import pytest

no_engine = os.environ.get("OCX_SYSTEMD_INNER") or (
    open("/proc/1/comm").read().strip() == "systemd" and not shutil.which("docker"))
pytestmark = pytest.mark.skipif(bool(no_engine), reason="needs a Docker engine on the host")

DRIVE = ["/opt/ocx/venv/bin/python", "/src/tests/node_system/drive.py"]


def drive(container, *args: str) -> str:
    done = container.exec([*DRIVE, *args])
    assert done.exit_code == 0, done.output
    lines = done.output.strip().splitlines()
    return lines[-1] if lines else ""


def test_a_session_whose_host_restarted_is_answered_lost_by_the_boot_check(systemd_container):
    c = systemd_container
    drive(c, "init", "losttest", "8383")
    record = drive(c, "post", "losttest", json.dumps({"objective": "sleep"}))
    deadline = time.monotonic() + 30
    while drive(c, "active", "losttest", record) != "active":
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.2)
    c.restart()  # systemd and every unit go away; the node's files stay
    response = json.loads(drive(c, "response", "losttest", record, "90"))
    assert response["outcome"] == "lost"
    assert "went down" in response["note"]
    assert drive(c, "active", "losttest", record) != "active"
    # The boot check itself succeeded (D6: it once failed after a restart, and left sessions unanswered).
    check = c.exec(["systemctl", "show", "ocx-check@losttest.service", "-p", "Result", "-p", "ActiveState"]).output
    assert "Result=success" in check, check
