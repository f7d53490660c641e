"""Lines to the journal with OCX's own fields (the only journal writer).

`send("started", OCX_RECORD=hash)` makes `journalctl OCX_RECORD=hash` find
the line. pystemd's sd_journal_sendv when it is installed (imported only
when first used: it loads libsystemd, and `ocx hook` start-up matters, D5);
otherwise the journal's native datagram protocol on its socket, which needs
nothing but the standard library.
"""

from __future__ import annotations

import re
import socket
import struct
import sys

from .errors import SystemdLayerError

SOCKET = "/run/systemd/journal/socket"
_FIELD = re.compile(r"[A-Z0-9][A-Z0-9_]*")


class JournalError(SystemdLayerError, OSError):
    """A journal field name journald would drop, or the journal refused the entry."""


def _fields(message: str, priority: int, fields: dict[str, object]) -> dict[str, str]:
    out = {"MESSAGE": message, "PRIORITY": str(priority),
           "SYSLOG_IDENTIFIER": str(fields.pop("SYSLOG_IDENTIFIER", "ocx"))}
    for k, v in fields.items():
        # journald drops fields whose names break its rules; refuse loudly.
        if not _FIELD.fullmatch(k) or k.startswith("_"):
            raise JournalError(f"{k!r} is not a journal field name")
        out[k] = str(v)
    return out


def encode(fields: dict[str, str]) -> bytes:
    """The native protocol: KEY=value lines; a value with a newline is sent
    as KEY, newline, its length as 64-bit little-endian, the bytes."""
    parts = []
    for k, v in fields.items():
        b = v.encode()
        if b"\n" in b:
            parts.append(k.encode() + b"\n" + struct.pack("<Q", len(b)) + b + b"\n")
        else:
            parts.append(k.encode() + b"=" + b + b"\n")
    return b"".join(parts)


def _send_socket(fields: dict[str, str], path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        try:
            s.sendto(encode(fields), path)
        except OSError as e:
            raise JournalError(f"journal socket {path}: {e}") from e


def send(message: str, priority: int = 6, *, socket_path: str | None = None,
         **fields: object) -> str:
    """Log MESSAGE with extra FIELDS; returns how it was sent."""
    f = _fields(message, priority, dict(fields))
    if socket_path is None:
        try:
            import pystemd.journal as pj  # lazy: loads libsystemd
        except ImportError:
            pj = None
        if pj is not None:
            rc = pj.sendv(*(f"{k}={v}" for k, v in f.items()))
            if rc not in (None, 0):
                raise JournalError(f"sd_journal_sendv returned {rc}")
            return "pystemd"
    _send_socket(f, socket_path or SOCKET)
    return "socket"


if __name__ == "__main__":   # python -m ocx.systemd.journal MESSAGE KEY=VALUE…
    kv = dict(a.split("=", 1) for a in sys.argv[2:])
    print(send(sys.argv[1], 6, **kv))  # info; the fields (KEY=VALUE) are the journal's, upper case
