"""The manager's state, for telling a shutdown, or root's stop, from any other end of a run (D4).

A run's stop step and the node's answering both ask `stopping()`. The
boot-time check also asks `started_at()`: a run that ended before this
manager started ended with the last boot, whatever its stop step saw.
"""
from __future__ import annotations

import os

SYSTEMCTL = "/usr/bin/systemctl"


def system_state() -> str | None:
    """"running", "degraded", "stopping"…; None when it cannot be read.

    `systemctl`, as root, asks systemd over its private socket, which still
    answers while the system bus goes down with the system; a D-Bus client
    through the bus may not (seen: a stop step during a container's shutdown
    read nothing, and took the shutdown for a plain stop)."""
    import subprocess

    try:
        done = subprocess.run([SYSTEMCTL, "is-system-running"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def job_on(unit: str) -> str | None:
    """The type of the job systemd runs on UNIT now ("stop", "restart", ...), or None: read by a
    run's stop step, a stop job there is one the unit's program did not ask for (only root, or
    whom polkit lets manage units, queues one: `machinectl terminate`, `systemctl stop`)."""
    import subprocess

    try:
        done = subprocess.run([SYSTEMCTL, "list-jobs", "--no-legend", "--full", unit],
                              capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():  # JOB UNIT TYPE STATE
        fields = line.split()
        if len(fields) >= 4 and fields[1] == unit:
            return fields[2]
    return None


def stopping() -> bool:
    return system_state() == "stopping"


def started_at() -> float | None:
    """When PID 1 (this boot's manager) started, in Unix seconds."""
    try:
        with open("/proc/stat") as stat:
            boot = next(float(line.split()[1]) for line in stat if line.startswith("btime "))
        with open("/proc/1/stat") as pid1:
            ticks = float(pid1.read().rsplit(")", 1)[1].split()[19])
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None
