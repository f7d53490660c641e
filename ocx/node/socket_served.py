"""Whether a socket-served run can still reach its tools (C6, D22, D24, D34).

A `no_password` run (or one without network) writes only through its tool
socket, served by ocx-tools@NAME.service (ocx/tool_service/tool_socket.py). If that
socket is gone the node can no longer hold what it promised, and the run is
answered `unenforced` (D24). "Gone", judged on each pass of the node:

- the socket accepts a connection: it is there;
- else the tool service is starting, stopping or waiting to restart
  (Restart=on-failure): the pass waits up to RESTART_GRACE_SECONDS for it to settle,
  so a brief restart ends no run;
- it settled `active` (Type=notify: READY once every open run's socket is
  bound) and the socket still accepts nothing within GRACE_SECONDS: gone
  (the file was removed, or its listener closed);
- it settled inactive or failed (stopped, or past its start limit): gone.

The service's own stop step pokes the node, so its going is looked at at
once; a removed file is seen at the next pass (any request to the
repository, D26).
"""
from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol.decide import OpenRecord
from .record_dirs import RecordDir

if TYPE_CHECKING:  # dbus-next's, loaded by whoever asks
    from ..systemd.manager import Systemd

SOCKET_NAME = "tools.sock"
RESTART_GRACE_SECONDS = 30.0  # a restart takes RestartSec (0.1 s) and a start; a start limit ends it in 10 s
GRACE_SECONDS = 3.0  # a record opened in this pass: the service binds its socket on inotify, in ms
_MOVING = ("activating", "deactivating", "reloading")


def served_by_socket(opened: OpenRecord) -> bool:
    """C6: a run without its password; D34: a run that cannot reach the server."""
    return bool(opened.record.restrict.no_password) or not opened.record.sandbox.network


def tools_service(name: str) -> str:
    return f"ocx-tools@{name}.service"


def tool_socket_path(record_dir: RecordDir) -> Path:
    return record_dir.tools / SOCKET_NAME


@contextmanager
def short_path(path: Path) -> Iterator[str]:
    """PATH as /proc/self/fd/N/NAME: a record directory's path is longer than
    a Unix socket's 108 bytes allow (its 64-hex hash)."""
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def socket_accepts(path: Path) -> bool:
    """Whether something listens on PATH. The server takes a connection that
    sends nothing as a probe and answers nothing."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe, short_path(path) as reachable:
            probe.settimeout(2.0)
            probe.connect(reachable)
        return True
    except OSError:
        return False


async def _settled(systemd: Systemd, service: str) -> tuple[str, str | None]:
    deadline = time.monotonic() + RESTART_GRACE_SECONDS
    while True:
        state = await systemd.state(service)
        active = state.active_state if state else "inactive"
        if active not in _MOVING or time.monotonic() > deadline:
            return active, state.result if state else None
        await asyncio.sleep(0.1)


async def tools_lost(node_name: str, systemd: Systemd, record_dir: RecordDir) -> str | None:
    """Why the run of RECORD_DIR can no longer reach its tools, or None."""
    path = tool_socket_path(record_dir)
    if socket_accepts(path):
        return None
    service = tools_service(node_name)
    active, result = await _settled(systemd, service)
    if active in _MOVING:
        return None  # still moving after RESTART_GRACE_SECONDS: its stop step pokes the node again
    if active == "active":
        deadline = time.monotonic() + GRACE_SECONDS
        while time.monotonic() < deadline:
            if socket_accepts(path):
                return None
            await asyncio.sleep(0.1)
        return f"its tool socket is gone: {service} runs but {path.name} accepts no connection"
    failed = f", {result}" if result and result != "success" else ""
    return f"its tool socket is gone: {service} is {active}{failed} and will not restart"
