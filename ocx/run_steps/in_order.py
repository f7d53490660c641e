"""Sessions' programs start in the order their records came (docs/node.md, 'In the order they came').

The node starts sessions' units in the order their records were received
(tend.py), but their preparations run side by side (turns.py) and end in any
order: a home made ahead or not, a pull, the machine's load. In a burst of
100, 30 programs started before one whose record came earlier. So a
session's preparation is queued by its record's receipt (ORDER, the node's
argv): on its start it puts a file named by it in `starts/` in the node's
state and holds an exclusive `flock` on it; done, it gives up its turn and
waits, within ORDER_SECONDS, until the session queued just before it has
ended its preparation (its lock free: it exited, however) and systemd has
started that one's program (its ExecMainStartTimestamp, or its unit no
longer starting: failed, stopped, gone). Only then does it exit, and
systemd starts its own program after. A preparation that died leaves a file
whose lock is free: the next one in the queue takes it as ended and removes
it. A waiter holds no turn, and a turn's holder never waits for one, so no
wait is ever circular; the bound keeps a stuck start from holding the rest.
The wait for a lock sleeps in the kernel until the holder's last descriptor
closes (inotify's IN_CLOSE_WRITE: it opened the file to write), not in a
poll: a burst's waiters polling every 5 ms spent their units' CPU on it.
Standard library only, and libsystemd's sd-bus (PID 1's private socket) when there is one to wait for.
"""
from __future__ import annotations

import fcntl
import os
import select
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..node import inotify

STARTS = "starts"  # beside turns/ in the node's state (turns.py)
ORDER_SECONDS = 5.0  # the longest a preparation waits for the one before it
# The one before ended its preparation this long ago: systemd started its program (or failed to) then,
# and nobody asks the bus (a quiet node's next session; its file's time is when it left).
LONG_AGO_SECONDS = 2.0
POLL_SECONDS = 0.005  # the bus's answer, while the one before is between its preparation and its program
# A lock's release is an event; this is only how often it is looked at anyway, should one be missed.
RECHECK_SECONDS = 0.25


def starts_of(fossil_home: Path) -> Path:
    return fossil_home.parent / STARTS


def _name(order: int, stem: str) -> str:
    return f"{order:020d}-{stem}"


def enter(directory: Path, order: int, stem: str) -> int:
    """This preparation's place in the queue: a descriptor holding its file's lock until it leaves or exits.
    Locked before it is named, so no other ever finds it unlocked while this one lives."""
    directory.mkdir(mode=0o700, exist_ok=True)
    hidden = directory / f".{stem}"
    fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(hidden, directory / _name(order, stem))
    except BaseException:
        os.close(fd)
        raise
    return fd


def queued(fossil_home: Path, order: int | None, stem: str) -> tuple[Path, int, str, int] | None:
    """A session's place among the starts, as leave() takes it; none for a check-in run (no ORDER),
    or when it cannot be had: never refused for the order, it then starts when it is ready."""
    if order is None:
        return None
    where = starts_of(fossil_home)
    try:
        return where, order, stem, enter(where, order, stem)
    except OSError as trouble:
        print(f"prepare: not queued by its record's receipt ({trouble})", flush=True)
        return None


def leave(directory: Path, order: int, stem: str, fd: int, *, started: bool = True) -> None:
    """Its place given up: its lock freed. Its file stays while its program may still be starting, for
    the next to wait on that (the next removes it, finding its lock free); one whose program never
    starts (STARTED false: its preparation failed) removes its own."""
    try:
        if started:
            os.utime(fd)  # when it left: the next need not ask the bus once that is long ago
        else:
            os.unlink(directory / _name(order, stem))
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _held(path: Path) -> bool | float:
    """True while a live preparation holds PATH; else when its holder left it (0.0: gone already),
    and a free one (its holder gone) is removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0.0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        left = os.fstat(fd).st_mtime
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return left


def before(directory: Path, order: int, stem: str) -> str | None:
    """The file of the session queued just before ORDER, if any."""
    own = _name(order, stem)
    earlier = sorted(name for name in os.listdir(directory) if not name.startswith(".") and name < own)
    return earlier[-1] if earlier else None


def wait_for_the_one_before(directory: Path, order: int, stem: str, started: Callable[[str], bool],
                            seconds: float = ORDER_SECONDS) -> str:
    """Wait until the session queued just before this one has its program started (STARTED, given its
    unit's name), or SECONDS pass; says what it waited for, for the unit's journal."""
    deadline = time.monotonic() + seconds
    began = time.monotonic()
    name = before(directory, order, stem)
    if name is None:
        return "none before it"
    unit, looks, asks = name.split("-", 1)[1] + ".service", 1, 1
    with _closes(directory / name) as closed:  # watched before it is looked at: no release is missed
        while (left := _held(directory / name)) is True:
            if (remaining := deadline - time.monotonic()) <= 0:
                return f"{unit} still preparing after {seconds:.0f} s: not waited for longer"
            closed(min(remaining, RECHECK_SECONDS))
            looks += 1
    if left and time.time() - left > LONG_AGO_SECONDS:
        return f"{unit} prepared {time.time() - left:.0f} s ago"
    while not started(unit):
        if time.monotonic() >= deadline:
            return f"{unit}'s program not started after {seconds:.0f} s: not waited for longer"
        time.sleep(POLL_SECONDS)
        asks += 1
    return (f"{unit}'s program started, waited {(time.monotonic() - began) * 1000:.0f} ms "
            f"(its lock looked at {looks}, systemd asked {asks} times)")


@contextmanager
def _closes(path: Path) -> Iterator[Callable[[float], None]]:
    """A wait, of at most its seconds, for a descriptor of PATH opened to write to be closed (its
    holder's, by its exit or leave()); a short sleep instead if PATH cannot be watched (gone)."""
    try:
        fd = inotify.watch(str(path), inotify.IN_CLOSE_WRITE)
    except OSError:
        yield lambda seconds: time.sleep(min(seconds, POLL_SECONDS))
        return
    try:
        def wait(seconds: float) -> None:
            if select.select([fd], [], [], seconds)[0]:
                inotify.drain(fd)
        yield wait
    finally:
        os.close(fd)


def wait_then_leave(queued: tuple[Path, int, str, int]) -> None:
    """A prepared session's wait for the one before it (QUEUED: from queued()), said in its unit's
    journal with its CPU (bench/inside.py reads it), then its place given up. Its run is prepared
    already: nothing here may fail it."""
    cpu = time.process_time()
    try:
        with ProgramStarted() as started:
            said = wait_for_the_one_before(*queued[:3], started)
    except Exception as trouble:  # a courtesy to the order, never a reason for the run not to start
        said = f"not waited for ({trouble})"
    finally:
        leave(*queued)
    print(f"prepare: in the order the records came: {said}; CPU {(time.process_time() - cpu) * 1000:.1f} ms",
          flush=True)


class ProgramStarted:
    """Whether systemd started a unit's program, or no longer starts it (failed, stopped, gone, or the
    bus unreadable: never waited on for nothing), over one connection to PID 1's private socket held
    while used (a preparation is root's: no dbus-daemon between, nor its name signals to every listener)."""

    def __init__(self) -> None:
        self.bus: object | None = None

    def __call__(self, unit: str) -> bool:
        from ..systemd.sd_bus import SERVICE, UNIT, BusUnreadable, SystemBus

        try:
            if self.bus is None:
                self.bus = SystemBus(private=True)
            assert isinstance(self.bus, SystemBus)
            start, state = self.bus.properties([(unit, SERVICE, "ExecMainStartTimestampMonotonic", b"t"),
                                                (unit, UNIT, "ActiveState", b"s")])
        except BusUnreadable:
            return True
        return bool(start) or state != "activating"

    def __enter__(self) -> ProgramStarted:
        return self

    def __exit__(self, *exc: object) -> None:
        from ..systemd.sd_bus import SystemBus

        if isinstance(self.bus, SystemBus):
            self.bus.close()
