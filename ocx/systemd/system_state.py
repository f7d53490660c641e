"""The manager's state, for telling a shutdown from any other end of a run (D4).

A run's stop step asks `stopping()` (pystemd: synchronous, fast to start,
which suits a step systemd kills if slow), over systemd's private socket,
since the system bus may already be going down with the system. The
boot-time check also asks `started_at()`: a run that ended before this
manager started ended with the last boot, whatever its stop step saw.
"""
from __future__ import annotations

import os

PRIVATE_BUS = b"unix:path=/run/systemd/private"


def system_state() -> str | None:
    """"running", "degraded", "stopping"…; None when it cannot be read."""
    try:
        from pystemd.dbuslib import DBusAddress
        from pystemd.systemd1 import Manager
    except ImportError:
        return None
    for private in (True, False):
        try:
            if private:
                with DBusAddress(PRIVATE_BUS) as bus, Manager(bus=bus) as manager:
                    state = manager.Manager.SystemState
            else:
                with Manager() as manager:
                    state = manager.Manager.SystemState
            return state.decode() if isinstance(state, bytes) else str(state)
        except Exception:  # not root, or no such socket: try the system bus
            continue
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
