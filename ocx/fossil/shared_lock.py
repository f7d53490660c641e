"""SQLite's shared lock, held by a process that reads a repository's bytes without SQLite: a byte copy
of the node's clone for runs while Fossil's pull may be committing to it (copies.py).

SQLite (a rollback journal, as Fossil keeps a repository) gives a reader its SHARED lock by a read
lock on its PENDING byte, then on its SHARED range, then letting the PENDING byte go; a writer commits
only once it holds a write lock on the whole SHARED range (EXCLUSIVE), which any reader's read lock
there holds off, and takes the PENDING byte first, so new readers wait for it rather than starve it
(SQLite's os_unix.c, "locking"). The same bytes are locked here, as open file description locks
(fcntl(2), F_OFD_SETLK): they conflict with SQLite's across processes as its own do, and unlike a
traditional POSIX lock they are not let go when any other descriptor of the file in this process
closes (a Repository of it, another copy).

A commit cut off (its writer killed) leaves a hot journal beside the file, and the file half written:
SQLite rolls it back at the next reader's start, and so does this, through SQLite, before it reads.
Standard library only: the preparation imports it.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
import time
from contextlib import contextmanager

from .errors import FossilLayerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PENDING_BYTE = 0x40000000  # SQLite's os_unix.c: the lock bytes sit at 1 GiB, whatever the file's size
RESERVED_BYTE = PENDING_BYTE + 1
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510
WAIT_SECONDS = 30.0  # a pull's commit is milliseconds; a writer holding PENDING longer is gone wrong
_POLL_SECONDS = 0.002


class LockTimeout(FossilLayerError):
    """No shared lock within WAIT_SECONDS: a writer held the file all that time."""


def _flock(kind: int, start: int, length: int) -> bytes:
    # struct flock: l_type, l_whence (short), l_start, l_len (off_t), l_pid (0 for an OFD lock)
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def _set(fd: int, kind: int, start: int, length: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(kind, start, length))
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _held_by_a_writer(fd: int) -> bool:
    """Whether another holds SQLite's RESERVED byte: a writer whose journal is live, not hot."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK, RESERVED_BYTE, 1))
    kind: int = struct.unpack("hhqqi4x", answer)[0]
    return kind != fcntl.F_UNLCK


def _hot(fd: int, path: Path) -> bool:
    """SQLite's test of a hot journal: there, its first byte not zero (a persisted journal's header is
    zeroed once committed), and no writer holding RESERVED."""
    try:
        journal = os.open(f"{path}-journal", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        first = os.read(journal, 1)
    finally:
        os.close(journal)
    return first not in (b"", b"\0") and not _held_by_a_writer(fd)


def _roll_back(path: Path) -> None:
    """SQLite's own rollback of a hot journal: its first read does it."""
    import sqlite3  # only here: a cut-off commit is rare, and the package's imports are not

    connection = sqlite3.connect(str(path), timeout=WAIT_SECONDS)
    try:
        connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    finally:
        connection.close()


@contextmanager
def shared(fd: int, path: Path) -> Iterator[None]:
    """SQLite's SHARED lock on the repository at PATH, open as FD, held while the block reads it: no
    commit changes the file meanwhile, and a commit cut off before is rolled back first."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        if _set(fd, fcntl.F_RDLCK, PENDING_BYTE, 1):
            got = _set(fd, fcntl.F_RDLCK, SHARED_FIRST, SHARED_SIZE)
            _set(fd, fcntl.F_UNLCK, PENDING_BYTE, 1)
            if got and not _hot(fd, path):
                break
            if got:  # then look again, as SQLite does once it rolled back: bounded by the deadline too
                _set(fd, fcntl.F_UNLCK, SHARED_FIRST, SHARED_SIZE)
                _roll_back(path)
        if time.monotonic() > deadline:
            raise LockTimeout(f"{path} held by a writer for {WAIT_SECONDS:g} s")
        time.sleep(_POLL_SECONDS)
    try:
        yield
    finally:
        _set(fd, fcntl.F_UNLCK, SHARED_FIRST, SHARED_SIZE)
