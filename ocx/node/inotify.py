"""inotify through libc, for the node's waits: never a timer (D26). Standard library only."""
from __future__ import annotations

import ctypes
import os
import struct

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000  # the kernel's queue overflowed: events were lost, look at everything
IN_IGNORED = 0x8000  # the watch is gone (its directory removed)
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name


_LIBC: list[ctypes.CDLL] = []  # loaded once; not functools.cache, whose import (collections) a feeder pays


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def watch(path: str, mask: int) -> int:
    """A non-blocking inotify descriptor that becomes readable on MASK events of PATH."""
    libc = _libc()
    fd: int = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), mask) < 0:
        error = ctypes.get_errno()
        if fd >= 0:
            os.close(fd)
        raise OSError(error, f"inotify on {path}")
    return fd


def drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except BlockingIOError:
        pass


def events(fd: int) -> list[tuple[int, int, str]]:
    """Every event waiting on FD, as (watch, mask, name); the name is empty for the watched
    directory itself. Bounded by what the kernel queued (its queue is bounded)."""
    found: list[tuple[int, int, str]] = []
    try:
        while data := os.read(fd, 65536):
            at = 0
            while at + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, at)
                name = data[at + _HEADER.size:at + _HEADER.size + length].split(b"\0", 1)[0]
                found.append((wd, mask, name.decode(errors="replace")))
                at += _HEADER.size + length
    except BlockingIOError:
        pass
    return found


def add_watch(fd: int, path: str, mask: int) -> int:
    """Also watch PATH on the descriptor FD (idempotent: the same path keeps one watch);
    the watch's number, which its events carry."""
    wd = _libc().inotify_add_watch(fd, path.encode(), mask)
    if wd < 0:
        raise OSError(ctypes.get_errno(), f"inotify on {path}")
    return int(wd)
