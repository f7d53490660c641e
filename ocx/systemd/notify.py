"""sd_notify for a Type=notify service: one datagram to $NOTIFY_SOCKET."""
from __future__ import annotations

import os
import socket


def ready() -> bool:
    """Tell systemd the service is ready; False when not run by systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
        channel.sendto(b"READY=1", address)
    return True
