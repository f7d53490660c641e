"""Preparations take turns: at most two a core at once (docs/node.md, 'Preparations take turns').

A burst of records starts a unit for each, and each unit's preparation wants
~250 ms of CPU on click.fossil. Run all at once, the kernel shares the cores
fairly among them and every one finishes near the end of the burst: a burst
of 30 had its median program start at 0.9 of its last. Taking turns, the
same work ends one preparation after another, so more programs start early.
Two a core, not one: a preparation also waits (Fossil's writes, the served
repository's lock), and with one a core the cores idled meanwhile (a burst
of 100 took 35 s instead of 25; with two, 28 s, and its median program
start came 4 s earlier than with none). A turn is an exclusive `flock` on
one of those files in the node's state (`turns/`): a waiter sleeps in the
kernel, and a preparation that dies frees its turn with its last
descriptor. Only the units' preparations take turns: the node prepares a
run without network itself (D34), one at a time already, and never waits.
Standard library only: the preparation imports it.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

TURNS = "turns"  # beside the node's own ~/.fossil (Preparation.fossil_home) in its state


def turns_of(fossil_home: Path) -> Path:
    return fossil_home.parent / TURNS


def take_turn(directory: Path, count: int | None = None) -> int:
    """A descriptor holding one of COUNT turns (twice the cores it may use by default), waiting for one if all are
    held. It is not inherited by the preparation's children (close-on-exec): the turn ends with it."""
    count = max(1, count or 2 * len(os.sched_getaffinity(0)))  # the cores it may use (a cpuset), as tend.py
    directory.mkdir(mode=0o700, exist_ok=True)

    def opened(index: int) -> int:
        return os.open(directory / f"turn-{index}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    for index in range(count):  # a free one, if any
        fd = opened(index)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
    fd = opened(os.getpid() % count)  # all held: wait for one, the waiters spread over them
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd
