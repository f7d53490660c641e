"""The manager's state, for telling a shutdown, or root's stop, from any other end of a run (D4).

A run's stop step asks `end_facts()`, the node's answering `stopping()`.
The boot-time check also asks `started_at()`: a run that ended before this
manager started ended with the last boot, whatever its stop step saw.

Both ask PID 1 over its private socket (sd_bus.py), as `systemctl` does as
root, in the asking process: two `systemctl` runs were a process each at
every run's end. `systemctl` itself is asked only when that socket cannot
be (not root, or no libsystemd).
"""
from __future__ import annotations

import os

SYSTEMCTL = "/usr/bin/systemctl"


def _over_private_socket(unit: str | None) -> tuple[str | None, str | None] | None:
    """The manager's state and, for UNIT, the type of the job on it now ("" for none): each None
    where PID 1 answered nothing; the whole None when its private socket cannot be asked."""
    from .sd_bus import JOB, MANAGER, MANAGER_PATH, UNIT, BusUnreadable, SystemBus

    asked = [(MANAGER_PATH.decode(), MANAGER.decode(), "SystemState", b"s")]
    try:
        with SystemBus(private=True) as bus:
            said, *job = bus.properties(asked + ([(unit, UNIT, "Job", b"(uo)")] if unit else []))
            state = said if isinstance(said, str) else None
            if not job or not isinstance(job[0], tuple):
                return state, None
            number, path = job[0]
            if not number:  # (0, "/"): no job on it
                return state, ""
            kind = bus.properties([(str(path), JOB, "JobType", b"s")])[0]
            # gone between the two asks: no job now, as a later `systemctl list-jobs` would say
            return state, (kind if isinstance(kind, str) else "")
    except BusUnreadable:
        return None


def end_facts(unit: str) -> tuple[bool, str | None]:
    """For a run's stop step (D4): whether the system is stopping, and the type of the job systemd runs
    on UNIT now (job_on's), over one connection."""
    state, job = _over_private_socket(unit) or (None, None)
    if state is None:
        state = system_state()
    if job is None:  # not read: systemctl's list of jobs
        job = job_on(unit)
    return state == "stopping", job or None


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
    state, _ = _over_private_socket(None) or (None, None)
    return (state if state is not None else system_state()) == "stopping"


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
