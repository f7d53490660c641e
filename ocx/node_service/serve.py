"""The node's root service: started on demand by its socket or its path unit, then up (D26, D27).

    ocx node serve NAME

systemd starts it when Fossil's hook or a run's stop step connects to the
node's socket, or when the repository file changes (ocx-node@NAME.path,
through ocx-wake@NAME). Once started it stays up, so a record on a quiet
node pays no Python start (D38; docs/node.md, 'The node's service up'): after its passes it
waits on its socket and on the repository file's inotify, with no timeout
(D26: nothing polls on a timer). A poke runs a pass; a change of the file
runs one only when the repository was written (`PRAGMA data_version`):
Fossil opens the file read-write for every request, and a read starts
nothing. Two waits are timed: for a step that failed and is due again
(tend.py, retry_in), and, once after a burst, IDLE_SECONDS without events,
when the runs' clone is brought up to date (keep_template); then the wait
has no timeout again. Its status line (`systemctl show -p StatusText`) says
which: `pass N`, `waiting`, `settling` or `idle`.

While it is up it has the directory `awake` (host_paths.awake_path, its
RuntimeDirectory=, made by systemd before its process starts), so
ocx-wake@NAME starts no process for each read of the repository (D26:
the trigger coalesced). A pass that fails as a whole is tried again a few
times (FAILED_PASSES), then the service exits cleanly: the next event
starts it (never a restart loop; killed, systemd restarts it,
Restart=on-failure). It reads its configuration again when its file or
the node user's password file changed, so `ocx node init` run again needs
no restart. A thread of its own lists each live run as a machine
(machines.py, D32).
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
from typing import TYPE_CHECKING

from ..fossil.errors import FOSSIL_FAILURES
from ..fossil.repository import Repository
from ..node import config as node_config
from ..node import spare, template
from ..node.faults import describe
from ..node.host_paths import awake_path
from ..node.inotify import IN_CLOSE_WRITE, IN_MODIFY, watch
from ..node.inotify import drain as drain_events
from ..protocol.errors import OcxError
from ..systemd.notify import status
from .context import NodeContext
from .intake import PassReport, run_pass
from .machines import MachinesThread
from .start_stop import spare_bounds

if TYPE_CHECKING:
    from ..systemd.manager import Systemd

SD_LISTEN_FDS_START = 3
# Every `fossil` the service starts (the pull into the runs' clone, a home made ahead, a user
# change) runs in a scope of its own with these bounds (systemd/scopes.py): what it handles was
# sent by runs, and a pull of 200 MB of zeros takes 400 MB. Far above a pull of real history.
FOSSIL_MEMORY_MAX = 512 * 1024 * 1024
FOSSIL_TASKS_MAX = 16
IDLE_SECONDS = 5.0  # after a burst, this long without events: the runs' clone is brought up to date
FAILED_PASSES = 5  # in a row: then exit, and wait for the next event
CANNOT_START = 78  # EX_CONFIG: RestartPreventExitStatus= in its unit, so no restart loop
RESTART_WAIT_SECONDS = 30.0  # a restart onto `current` it asked of PID 1 stops it well before
UNREADABLE_CONFIG: tuple[type[Exception], ...] = (ValueError, *FOSSIL_FAILURES)  # a bad file, or unreadable


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
    """The directory that says the service is up (its RuntimeDirectory=), when systemd made it."""

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


class RepositoryChanges:
    """The repository file's inotify, and whether what it reported wrote anything."""

    def __init__(self, path: str):
        self.path = path
        self._open()

    def _open(self) -> None:
        self.fd = watch(self.path, IN_CLOSE_WRITE | IN_MODIFY)
        self._inode = os.stat(self.path).st_ino
        self._reader = Repository(self.path)  # held open: data_version counts the commits of others since
        self._version = self._reader.data_version()

    def seen(self) -> None:
        """A pass begins: what was written before it is what it reads."""
        drain_events(self.fd)
        try:
            self._version = self._reader.data_version()
        except FOSSIL_FAILURES:
            pass  # the next event looks again

    def written(self) -> bool:
        """Whether the repository was written (or replaced) since the last look; drains the events."""
        drain_events(self.fd)
        try:
            if os.stat(self.path).st_ino != self._inode:  # a restored file: watch the new one
                self.close()
                self._open()
                return True
            version = self._reader.data_version()
        except FOSSIL_FAILURES:  # unreadable now: a pass says what is wrong, and logs it
            return True
        changed, self._version = version != self._version, version
        return changed

    def close(self) -> None:
        os.close(self.fd)
        self._reader.close()


async def one_pass(context: NodeContext, systemd: Systemd, failures: int) -> tuple[PassReport, int]:
    try:
        return await run_pass(context, systemd), 0
    except Exception as error:  # each record's own trouble is tended on its own; this is the pass's
        context.log(f"pass failed: {describe(error)}\n{traceback.format_exc()}", priority=3)
        return PassReport(retry_in=2.0 ** failures), failures + 1


def asked_since(context: NodeContext, before: dict[str, int]) -> str:
    """A node elsewhere's questions to the server's node since BEFORE, by name, for a pass's log line
    (each a round trip on a record's way to its start: D37, D38); nothing on the server's node."""
    if not context.config.elsewhere:
        return ""
    now = context.served.questions
    asked = {name: count - before.get(name, 0) for name, count in now.items() if count > before.get(name, 0)}
    return "; asked the server's node: " + (", ".join(f"{name} {n}" for name, n in sorted(asked.items())) or "nothing")


async def serve(name: str, idle: float = IDLE_SECONDS) -> int | None:
    """Passes, each when something asks for one; how many before a clean exit, or None when it could not start."""
    from ..fossil.program import confine_children
    from ..systemd.manager import Systemd
    from ..systemd.scopes import confiner

    listener = listening_socket()
    try:
        confine_children(confiner(f"ocx-node-{name}-fossil", memory_max=FOSSIL_MEMORY_MAX,
                                  tasks_max=FOSSIL_TASKS_MAX))
        moved_at = releases_recovered(name)
        context = NodeContext.load(node_config.load(name))
        changes = RepositoryChanges(context.config.repository)
        systemd = await Systemd.connect()
        if moved_at is not None:
            await restart_onto_current(name, moved_at)
    except Exception as error:  # whatever stops the start (its config, the bus): the pokes that
        # started it are read, or systemd starts it again for them at once, for ever.
        if listener is not None:
            drain(listener)
        print(f"ocx node serve {name}: cannot start: {describe(error)}", file=sys.stderr, flush=True)
        return None
    awake = Awake(name)
    awake.set()
    passes, failures, settle, stamp = 0, 0, False, config_stamp(context.config)
    machines = MachinesThread(context)  # each live run a machine (D32), in a thread of its own
    machines.start()
    try:
        while True:
            if listener is not None:
                drain(listener)
            changes.seen()
            if not systemd.bus.connected:  # the bus restarted while it waited: a new connection
                systemd = await Systemd.connect()
            status(f"pass {passes + 1}")
            began, asked = time.monotonic(), context.served.questions
            report, failures = await one_pass(context, systemd, failures)
            passes += 1
            machines.sweep_soon(context, report.running)
            # Imported after the first pass's record work, not before it: a node just started (an accept's
            # restart) starts the first runs without them.
            from . import git_update, release_requests

            # The git mirror (D49): its own unit, started after the pass's record work, never awaited.
            await git_update.after_pass(context, systemd)
            # Release requests (D46): each acted on once, in a unit of its own, never awaited.
            await release_requests.after_pass(context, systemd)
            context.log(f"pass {passes}: {report.receipts} receipts, {len(report.actions)} actions "
                        f"in {time.monotonic() - began:.3f} s" + asked_since(context, asked),
                        priority=6 if report.actions else 7)
            if report.more and failures == 0:  # receipts left for the next pass (intake.py, RECEIPTS_SECONDS): no wait
                settle = True
                continue
            if listener is None or failures >= FAILED_PASSES:
                return passes
            settle = settle or bool(report.receipts or report.actions)
            settle = await wait_for_work(context, listener, changes, report.retry_in, settle, idle)
            context, stamp = reloaded(context, name, stamp)
    finally:
        awake.clear()
        changes.close()
        systemd.close()


def releases_recovered(name: str) -> float | None:
    """The releases' root made consistent after a kill mid-accept or mid-roll-back (D46), before the
    node reads anything; when `current` last moved. A broken root stops no node: it serves from the
    release it runs, and says why."""
    from ..node.releases.services import recover_at_start

    try:
        return recover_at_start()
    except (OSError, ValueError) as error:
        print(f"ocx node serve {name}: the releases' root not recovered: {describe(error)}",
              file=sys.stderr, flush=True)
        return None


async def restart_onto_current(name: str, moved_at: float) -> None:
    """The node's services that started before `current` last moved (an accept killed before its
    restarts, or this start, launched before the recovery moved it) restarted onto it: a job of PID
    1's, which stops this process when it is among them; runs are units of their own and go on
    (D47). Pokes wait on the socket meanwhile."""
    from ..node.releases.services import restart_stale

    try:
        stale = await restart_stale(moved_at)
    except (OcxError, OSError) as error:  # the bus, say: it serves from the release it runs
        print(f"ocx node serve {name}: services not restarted onto current: {describe(error)}",
              file=sys.stderr, flush=True)
        return
    if stale:
        print(f"ocx node serve {name}: restarted onto the release current names: {', '.join(stale)}",
              file=sys.stderr, flush=True)
    if f"ocx-node@{name}.service" in stale:
        await asyncio.sleep(RESTART_WAIT_SECONDS)  # stopped by the restart before this ends; else go on serving


async def wait_for_work(context: NodeContext, listener: socket.socket, changes: RepositoryChanges,
                        retry_in: float | None, settle: bool, idle: float) -> bool:
    """Until a poke, a write of the repository, or a step due again (RETRY_IN); after a burst
    (SETTLE), IDLE seconds without events bring the runs' clone up to date. Returns whether
    the clone still waits to be brought up to date."""
    due = None if retry_in is None else time.monotonic() + max(0.2, retry_in)
    keep = time.monotonic() + idle if settle and due is None else None
    while True:
        deadline = keep if due is None else due
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        status("idle: waiting for a poke or a change of the repository" if timeout is None
               else f"waiting: a step is due again in {timeout:.1f} s" if due is not None
               else "settling: the runs' clone brought up to date and homes made ahead while nothing comes")
        watched: list[socket.socket | int] = [listener, changes.fd]
        ready, _, _ = await asyncio.to_thread(select.select, watched, [], [], timeout)
        if listener in ready or (changes.fd in ready and changes.written()):
            return settle
        if ready:
            continue  # a read of the repository: nothing to do
        if due is not None:
            return settle
        if keep is not None and time.monotonic() >= keep:
            # One home made ahead at a time, each followed by a look at the events (timeout 0): a
            # record that came meanwhile waits for one home's making, never for the whole pool's.
            more = keep_template(context)
            keep, settle = (time.monotonic(), True) if more else (None, False)


Stamp = tuple[tuple[int, int, int] | None, ...]  # each file's inode, mtime and size, or None when it is not there


def config_stamp(config: node_config.NodeConfig) -> Stamp:
    """What says the node's configuration or its password changed (`ocx node init` run again)."""
    stamps: list[tuple[int, int, int] | None] = []
    for path in (node_config.config_path(config.name), config.password_file):
        try:
            found = os.stat(path)
            stamps.append((found.st_ino, found.st_mtime_ns, found.st_size))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def reloaded(context: NodeContext, name: str, stamp: Stamp) -> tuple[NodeContext, Stamp]:
    """The context read again when its files changed, as a start of the service would have read it."""
    now = config_stamp(context.config)
    if now == stamp:
        return context, stamp
    try:
        return NodeContext.load(node_config.load(name)), now
    except UNREADABLE_CONFIG as error:
        context.log(f"configuration not read again, the one read before kept: {describe(error)}", priority=4)
        return context, now


def keep_template(context: NodeContext) -> bool:
    """Idle after a burst, the node brings the runs' clone up to date (template.py),
    so the next run on a quiet node starts without waiting for a pull, and makes one
    more home ahead from it (spare.py), so the next sessions wait for no checkout either.
    Whether it made one: then it is called again, while nothing comes, until the node's
    `spare_homes` are there."""
    try:
        template.current(context.config, log=context.log)
        path, lineage, mark, since = spare_bounds(context.config)
    except FOSSIL_FAILURES as error:  # the server is down, say: the next run's start tries again
        context.log(f"runs' clone not brought up to date: {error}", priority=4)
        return False
    began = time.monotonic()
    try:
        made = spare.make(path, mark, login=context.config.node_user, lineage=lineage,
                          count=context.config.spare_homes, since=since)
    except FOSSIL_FAILURES as error:  # the disk full, say: the next session makes its home itself
        context.log(f"no home made ahead: {error}", priority=4)
        return False
    if made is not None:
        context.log(f"a run's home made ahead from the runs' clone through receipt {mark} "
                    f"in {time.monotonic() - began:.3f} s", priority=7)
    return made is not None


def serve_forever(name: str) -> int:
    passes = asyncio.run(serve(name))
    if passes is None:
        sys.exit(CANNOT_START)
    return passes
