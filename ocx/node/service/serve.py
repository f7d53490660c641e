"""The node's root service: socket- and path-activated, it exits when idle (D26, D27).

    ocx node serve NAME

systemd starts it when Fossil's hook or a run's stop step connects to the
node's socket, or when the repository file changes (ocx-node@NAME.path).
It runs passes while pokes or changes of the repository keep coming, or
while a step that failed is due to be tried again (tend.py), then one last
pass, and exits: the node keeps no process per run, and none at all while
nothing happens. While it runs it watches the repository file itself, and
has the directory `awake` (host_paths.awake_path, made by systemd before its
process starts) so that ocx-wake@NAME starts no process for each read of
the repository meanwhile (issue 12: the trigger coalesced); it removes it
before its last look, so a change that comes after starts ocx-wake, whose
poke waits on the socket and makes systemd start the service again. A pass that fails as a whole is tried
again a few times, then the service exits cleanly: the next event starts
it (never a restart loop; killed, systemd restarts it, Restart=on-failure).
"""
from __future__ import annotations

import asyncio
import os
import select
import socket
import sys
import time
import traceback
from pathlib import Path

from ...fossil.errors import FOSSIL_FAILURES
from .. import config as node_config
from ..faults import describe
from ..inotify import IN_CLOSE_WRITE, IN_MODIFY, drain as drain_events, watch
from .. import template
from ..host_paths import awake_path
from .context import NodeContext
from .intake import PassReport, run_pass

SD_LISTEN_FDS_START = 3
IDLE_SECONDS = 5.0  # a burst of pushes is one service run, not one per push
FAILED_PASSES = 5  # in a row: then exit, and wait for the next event
CANNOT_START = 78  # EX_CONFIG: RestartPreventExitStatus= in its unit, so no restart loop


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


class Awake:
    """The directory that says the service runs its passes (its RuntimeDirectory=), when systemd made it."""

    def __init__(self, node: str):
        self.path = Path(awake_path(node))
        self.managed = self.path.is_dir()  # run by hand, the service leaves it alone

    def set(self) -> None:
        if self.managed:
            self.path.mkdir(mode=0o755, exist_ok=True)

    def clear(self) -> None:
        if self.managed:
            try:
                self.path.rmdir()
            except FileNotFoundError:
                pass


async def one_pass(context: NodeContext, systemd, failures: int) -> tuple[PassReport, int]:
    try:
        return await run_pass(context, systemd), 0
    except Exception as error:  # each record's own trouble is tended on its own; this is the pass's
        context.log(f"pass failed: {describe(error)}\n{traceback.format_exc()}", priority=3)
        return PassReport(retry_in=2.0 ** failures), failures + 1


async def serve(name: str, idle: float = IDLE_SECONDS) -> int | None:
    """Passes until idle; how many, or None when it could not start."""
    from ...systemd.manager import Systemd

    listener = listening_socket()
    try:
        context = NodeContext.load(node_config.load(name))
        changes = watch(context.config.repository, IN_CLOSE_WRITE | IN_MODIFY)
        systemd = await Systemd.connect()
    except Exception as error:  # whatever stops the start (its config, the bus): the pokes that
        # started it are read, or systemd starts it again for them at once, for ever.
        if listener is not None:
            drain(listener)
        print(f"ocx node serve {name}: cannot start: {describe(error)}", file=sys.stderr, flush=True)
        return None
    awake = Awake(name)
    awake.set()
    passes, last, failures = 0, False, 0
    async with systemd:
        while True:
            if listener is not None:
                drain(listener)
            drain_events(changes)
            began = time.monotonic()
            report, failures = await one_pass(context, systemd, failures)
            passes += 1
            context.log(f"pass {passes}: {report.receipts} receipts, {len(report.actions)} actions "
                        f"in {time.monotonic() - began:.3f} s", priority=6 if report.actions else 7)
            if listener is None or failures >= FAILED_PASSES:
                awake.clear()
                return passes
            if last:
                # Anything that came during the last pass is read before exiting;
                # what comes after this look starts ocx-wake, or finds the socket.
                awake.clear()
                ready, _, _ = select.select([listener, changes], [], [], 0)
                if not ready:
                    keep_template(context)
                    return passes
                awake.set()
            wait = idle if report.retry_in is None else min(idle, max(0.2, report.retry_in))
            ready, _, _ = await asyncio.to_thread(select.select, [listener, changes], [], [], wait)
            # Idle, with nothing to try again: one more pass, so nothing that came meanwhile waits.
            last = not ready and report.retry_in is None


def keep_template(context: NodeContext) -> None:
    """Idle, the node brings the runs' clone up to date (template.py), so the
    next run on a quiet node starts without waiting for a pull."""
    try:
        template.current(context.config, log=context.log)
    except FOSSIL_FAILURES as error:  # the server is down, say: the next run's start tries again
        context.log(f"runs' clone not brought up to date: {error}", priority=4)


def serve_forever(name: str) -> int:
    passes = asyncio.run(serve(name))
    if passes is None:
        sys.exit(CANNOT_START)
    return passes
