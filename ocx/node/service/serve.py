"""The node's root service: socket- and path-activated, it exits when idle (D26, D27).

    ocx node serve NAME

systemd starts it when Fossil's hook or a run's stop step connects to the
node's socket, or when the repository file changes (ocx-node@NAME.path).
It runs passes while pokes or changes of the repository keep coming, then
one last pass, and exits: the node keeps no process per run, and none at
all while nothing happens. While it runs it watches the repository file
itself, since its path unit does not fire for a unit already running; a
poke that comes as it exits stays queued on the socket, and systemd
starts it again.
"""
from __future__ import annotations

import asyncio
import os
import select
import socket

from .. import config as node_config
from .context import NodeContext
from ..inotify import IN_CLOSE_WRITE, IN_MODIFY, drain as drain_events, watch
from .intake import run_pass

SD_LISTEN_FDS_START = 3
IDLE_SECONDS = 5.0  # a burst of pushes is one service run, not one per push


def listening_socket() -> socket.socket | None:
    """The socket systemd passed (LISTEN_FDS), if it started us for it."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()) or int(os.environ.get("LISTEN_FDS", "0")) < 1:
        return None
    listener = socket.socket(fileno=SD_LISTEN_FDS_START)
    listener.setblocking(False)
    return listener


def drain(listener: socket.socket) -> int:
    """Accept every queued poke; what they say is only a hint (D26)."""
    count = 0
    while True:
        try:
            connection, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return count
        with connection:
            connection.settimeout(1)
            try:
                while connection.recv(65536):
                    pass
            except OSError:
                pass
        count += 1


async def serve(name: str, idle: float = IDLE_SECONDS) -> int:
    from ...systemd.manager import Systemd

    context = NodeContext.load(node_config.load(name))
    listener = listening_socket()
    changes = watch(context.config.repository, IN_CLOSE_WRITE | IN_MODIFY)
    passes, last = 0, False
    async with await Systemd.connect() as systemd:
        while True:
            if listener is not None:
                drain(listener)
            drain_events(changes)
            report = await run_pass(context, systemd)
            passes += 1
            context.log(f"pass {passes}: {report.receipts} receipts, {len(report.actions)} actions",
                        priority=6 if report.actions else 7)
            if listener is None:
                return passes
            if last:
                # Anything that came during the last pass is read before exiting;
                # what comes after this look finds the path unit free to fire.
                ready, _, _ = select.select([listener, changes], [], [], 0)
                if not ready:
                    return passes
            ready, _, _ = await asyncio.to_thread(select.select, [listener, changes], [], [], idle)
            last = not ready  # idle: one more pass, so nothing that came meanwhile waits


def serve_forever(name: str) -> int:
    return asyncio.run(serve(name))
