"""The manager's SystemState, read synchronously (pystemd, sd-bus).

A run's stop step asks it to tell a shutdown apart from any other stop
(D4: a node shutting down writes no response). pystemd is synchronous and
starts in a few milliseconds, which suits a step systemd kills if slow.
"""
from __future__ import annotations


def system_state() -> str | None:
    """"running", "degraded", "stopping"…; None when it cannot be read."""
    try:
        from pystemd.systemd1 import Manager
    except ImportError:
        return None
    try:
        with Manager() as manager:
            state = manager.Manager.SystemState
    except Exception:  # no bus, or no manager: say so rather than guess
        return None
    return state.decode() if isinstance(state, bytes) else str(state)


def stopping() -> bool:
    return system_state() == "stopping"
