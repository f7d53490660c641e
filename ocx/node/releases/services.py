"""Root's side of a move of `current` (D46, D47): the node's own services restarted onto it, a node
that comes back after a kill found consistent, and the releases nothing names removed.

The node's services run through the launcher (serving.py), so a restart is all it takes to move
them; runs are transient units of their own in ocx.slice, never children of a service, and a
restart ends none (D47). What names a release is read from systemd (the Exec* command lines of
the loaded `ocx-*` services: runs' units with their preparation and stop step, cpu watches,
builds) and the links; a release is removed only when none names it, the last KEEP besides.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..host_paths import RELEASES_DIRECTORY
from .links import Releases

if TYPE_CHECKING:
    from ...systemd.bus import Bus

NODE_SERVICE = "ocx-node@"  # restarted last, and waited on (move_services)
PAGE_SERVICE = "ocx-page@"  # socket-activated: stopped, and started anew by its next request (move_services)
OWN_SERVICES = ["ocx-node@*.service", "ocx-page@*.service", "ocx-tools@*.service", "ocx-follow@*.service",
                "ocx-steps@*.service"]
NAMING_UNITS = ["ocx-*"]  # every unit OCX starts is named so: runs, cpu watches, builds, the mirror's
RESTART_SECONDS = 60.0  # the node's restart settled (Type=simple: once it runs the new release's python)
_ID = r"[0-9a-f]{16}-[0-9a-f]{16}"


def serves_the_node(root: str) -> bool:
    """Whether ROOT is the releases' root the launcher reads (a test's own root moves no service)."""
    return os.path.realpath(root) == os.path.realpath(RELEASES_DIRECTORY)


def named_in(words: Iterable[str], root: str) -> set[str]:
    """The releases (IDs) under ROOT that WORDS (unit command lines' paths and arguments) name."""
    pattern = re.compile(re.escape(os.path.realpath(root).rstrip("/")) + r"/(" + _ID + r")(?:/|$)", re.ASCII)
    return {found.group(1) for word in words for found in pattern.finditer(word)}


async def move_services(moved_at: float, wait: bool = True) -> dict[str, str]:
    """The node's own services that run and still run what they started with before MOVED_AT (the
    link's time) moved onto `current`; one that started after the move already is not moved twice.
    In this order: the page's stopped, for its socket to start it anew at the next request (a
    restart's imports now would take the CPU the first runs on the new release wait on); the tools',
    the runs' steps' and follower's restarted, not waited on, so their imports run beside the node's own start rather
    than its first runs; then the node's, and with WAIT waited on until it runs the new release
    (Type=simple: its new process started): records posted meanwhile wait on its socket (D46).
    Returns name → "stopped: its socket starts it on the next request", "restarting", the node's
    ActiveState, or "restarted already"."""
    from ...systemd import unit_files
    from ...systemd.bus import Bus

    bus = await Bus.connect()
    try:
        said, nodes = {}, []
        for unit in await bus.list_units_by_patterns(OWN_SERVICES, ["active"]):
            name = str(unit[0])
            if not await _started_before(bus, name, moved_at):
                said[name] = "restarted already"
            elif name.startswith(PAGE_SERVICE):
                await bus.stop_unit(name)
                said[name] = "stopped: its socket starts it on the next request"
            elif name.startswith(NODE_SERVICE):
                nodes.append(name)
            else:
                await unit_files.try_restart(bus, name)
                said[name] = "restarting"
        for name in nodes:
            await unit_files.try_restart(bus, name)
        for name in nodes:
            said[name] = await unit_files.wait_settled(bus, name, RESTART_SECONDS) if wait else "restarting"
        return dict(sorted(said.items()))
    finally:
        bus.close()


async def _started_before(bus: Bus, name: str, moved_at: float) -> bool:
    """Whether the service NAME's main process started before MOVED_AT, by systemd's record (never a
    process's argv, which a compromised page could rewrite)."""
    from ...systemd import unit_files

    started = await unit_files.service_property(bus, name, "ExecMainStartTimestamp")
    return int(started or 0) < moved_at * 1_000_000


async def named_by_units(root: str) -> set[str]:
    """The releases under ROOT that a loaded unit's commands name (D47)."""
    from ...systemd import unit_files
    from ...systemd.bus import Bus

    bus = await Bus.connect()
    try:
        commands = await unit_files.command_words(bus, NAMING_UNITS)
    finally:
        bus.close()
    return named_in((word for words in commands.values() for word in words), root)


def remove_unnamed(releases: Releases, named: set[str]) -> list[str]:
    """Each release nothing names beyond the KEEP last (links.py) removed: first renamed to a
    `.ID.partial` that `recover` finishes removing, so a kill never leaves half a release by its name."""
    removed = []
    for release in releases.removable(named):
        partial = os.path.join(releases.root, f".{release}.partial")
        os.rename(os.path.join(releases.root, release), partial)
        shutil.rmtree(partial)
        removed.append(release)
    return removed


def services_moved(root: str) -> dict[str, str]:
    """The node's services that started before `current` last moved (its link's time) moved onto it
    (move_services), when ROOT is the node's and `current` names a release: after `accept` or
    `rollback` moved the links, or completing one killed before it moved them."""
    link = os.path.join(root, "current")
    if not serves_the_node(root) or not os.path.islink(link):
        return {}
    return asyncio.run(move_services(os.lstat(link).st_mtime))


def after_move(root: str) -> list[str]:
    """Then, the root held: the releases nothing names removed. Returns them."""
    from .staging import moving

    with moving(root) as releases:
        return remove_unnamed(releases, asyncio.run(named_by_units(root)))


@contextlib.contextmanager
def _held_if_free(root: str) -> Iterator[bool]:
    fd = os.open(os.path.join(root, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def recover_at_start(root: str = RELEASES_DIRECTORY) -> float | None:
    """At the node's start: the releases' root made consistent after a kill at any step (links.py
    `recover`), unless a command holds it (it recovers first itself, and restarts the services after).
    Returns when `current` last moved (its link's time), when it names a runnable release: a service
    started before then may run another release (`restart_stale`); None when there is none."""
    if not os.path.isdir(root) or os.path.islink(root):
        return None
    with _held_if_free(root) as held:
        if not held:
            return None
        releases = Releases(root)
        releases.recover()
        current = releases.link("current")
        if current is None or not os.access(os.path.join(root, current, "bin", "python"), os.X_OK):
            return None
        return os.lstat(os.path.join(root, "current")).st_mtime


async def restart_stale(moved_at: float) -> list[str]:
    """At the node's start, or completing a killed command: the node's own services that run and started
    before MOVED_AT (an accept or roll-back killed before it moved them, or this very start, launched
    before a recovery moved `current`) moved onto `current` (move_services), without waiting: a
    service may ask it of itself. Returns their names."""
    said = await move_services(moved_at, wait=False)
    return [name for name, done in said.items() if done != "restarted already"]
