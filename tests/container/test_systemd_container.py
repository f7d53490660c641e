"""The test container itself, driven from the host: it boots systemd, and
a restart takes systemd and every unit away and boots it afresh (what
later tests use to simulate systemd going away)."""

from __future__ import annotations

import os
import shutil

import pytest

no_engine = os.environ.get("OCX_SYSTEMD_INNER") or (
    open("/proc/1/comm").read().strip() == "systemd" and not shutil.which("docker"))
pytestmark = pytest.mark.skipif(bool(no_engine), reason="needs a Docker engine on the host")


def test_systemd_is_pid_1_and_units_run(systemd_container):
    c = systemd_container
    assert c.exec(["cat", "/proc/1/comm"]).output.strip() == "systemd"
    r = c.exec(["systemd-run", "--wait", "-q", "-p", "MemoryMax=32M", "/bin/true"])
    assert r.exit_code == 0, r.output
    assert c.exec(["test", "-d", "/src/ocx/systemd"]).exit_code == 0
    assert c.exec(["touch", "/src/x"]).exit_code != 0          # read-only


def test_a_restart_takes_every_unit_away(systemd_container):
    c = systemd_container
    r = c.exec(["systemd-run", "--unit", "ocx-before-restart", "/bin/sleep", "600"])
    assert r.exit_code == 0, r.output
    assert c.exec(["systemctl", "is-active", "ocx-before-restart"]).output.strip() == "active"
    seconds = c.restart()  # bounded by restart()'s own deadlines, not by a figure here
    print(f"restart to `running`: {seconds:.1f} s")
    assert c.exec(["systemctl", "is-active", "ocx-before-restart"]).output.strip() != "active"
    assert c.exec(["systemctl", "is-system-running"]).output.strip() in ("running", "degraded")
