"""inotify through libc, for the node's waits: never a timer (D26). Standard library only."""
from __future__ import annotations

import ctypes
import os

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


def watch(path: str, mask: int) -> int:
    """A non-blocking inotify descriptor that becomes readable on MASK events of PATH."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
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


def add_watch(fd: int, path: str, mask: int) -> None:
    """Also watch PATH on the descriptor FD (idempotent: the same path keeps one watch)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.inotify_add_watch(fd, path.encode(), mask) < 0:
        raise OSError(ctypes.get_errno(), f"inotify on {path}")
