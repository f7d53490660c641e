"""A socket-activated service's listening socket, and the length-prefixed blocks its clients send.

Two services take requests this way: the web page's (ocx-page@NAME, page/page_service.py) and the runs'
steps' (ocx-steps@NAME, run_steps/step_server.py). Each request is a few blocks, each a 4-byte
big-endian length and that many bytes, read within the caller's timeout and never past its bound.
"""
from __future__ import annotations

import os
import socket

from ..protocol.errors import OcxError

SD_LISTEN_FDS_START = 3


class RequestUnreadable(OcxError):
    """What came on the socket is not a whole request: cut short, or a block past its bound."""


def exactly(connection: socket.socket, count: int) -> bytes:
    parts, left = [], count
    while left > 0:
        part = connection.recv(min(left, 1 << 16))
        if not part:
            raise RequestUnreadable(f"the request ended {left} bytes short")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def block(connection: socket.socket, most: int, size: int | None = None) -> bytes:
    """The next block, at most MOST bytes; SIZE: its length, read already."""
    size = int.from_bytes(exactly(connection, 4), "big") if size is None else size
    if size > most:
        raise RequestUnreadable(f"a block of {size} bytes, more than {most}")
    return exactly(connection, size)


def listener(argv: list[str], service: str) -> socket.socket:
    """systemd's socket (LISTEN_FDS), or one bound here, 0600 (--listen PATH in ARGV: tests, by hand)."""
    if "--listen" in argv:
        path = argv[argv.index("--listen") + 1]
        bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        old = os.umask(0o177)
        try:
            bound.bind(path)
        finally:
            os.umask(old)
        bound.listen(64)
        return bound
    if os.environ.get("LISTEN_PID") != str(os.getpid()) or int(os.environ.get("LISTEN_FDS", "0")) < 1:
        raise SystemExit(f"{service}: no socket: systemd starts this for {service}@NAME.socket (or give --listen PATH)")
    return socket.socket(fileno=SD_LISTEN_FDS_START)
