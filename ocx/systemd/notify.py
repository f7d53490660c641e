"""sd_notify for a Type=notify service: one datagram to $NOTIFY_SOCKET."""
from __future__ import annotations

import os
import socket


def _send(message: str) -> bool:
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
            channel.setblocking(False)  # a status never holds the service up: a full queue drops it
            channel.sendto(message.encode(), address)
    except OSError:  # systemd not listening (any more), or its queue full: nothing to tell
        return False
    return True


def ready(status: str | None = None) -> bool:
    """Tell systemd the service is ready; False when not run by systemd."""
    return _send("READY=1" + (f"\nSTATUS={status}" if status else ""))


def status(text: str) -> bool:
    """The service's status line (StatusText=, `systemctl status`)."""
    return _send(f"STATUS={text}")
