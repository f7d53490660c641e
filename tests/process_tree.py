"""The processes a test started, and what their command lines and environments hold.

Each process's children are read from its threads' `children` lists, which
need nothing of any other process. Reading another process's command line or
environment waits on that process's memory lock, so a test reads those of
its own processes only: one stuck elsewhere on a busy machine (a container
being torn down beside the suite) must not hold a test, or the server thread
a test reads them from, with it.
"""
from __future__ import annotations

import os
from pathlib import Path


def children(pid: int) -> list[int]:
    """PID's own children (none when it is gone)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for thread in threads:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{thread}/children").read_text().split()]
        except OSError:
            continue  # the thread ended meanwhile
    return found


def descendants(pid: int) -> list[int]:
    """PID's children, theirs, and so on."""
    found, waiting = [], [pid]
    while waiting:
        below = children(waiting.pop())
        found += below
        waiting += below
    return found


def holding(secrets: list[bytes], pids: list[int]) -> list[str]:
    """`PID/cmdline` or `PID/environ` for each of PIDS whose command line or environment holds one of SECRETS."""
    found = []
    for pid in pids:
        for part in ("cmdline", "environ"):
            try:
                data = Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError:
                continue  # gone meanwhile
            found += [f"{pid}/{part}" for secret in secrets if secret in data]
    return found
