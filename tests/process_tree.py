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


def descendants(pid: int) -> list[int]:
    """PID's children, theirs, and so on (a process gone meanwhile is skipped)."""
    found, waiting = [], [pid]
    while waiting:
        parent = waiting.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                children = [int(child) for child in Path(f"/proc/{parent}/task/{thread}/children").read_text().split()]
            except OSError:
                continue
            found += children
            waiting += children
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
