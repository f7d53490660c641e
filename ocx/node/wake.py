"""Waking a node's service: a poke on its socket, `python -m ocx.node.wake NAME`
and `ocx node poke NAME` (D26).

Every wake-up goes through here: Fossil's hook, a run's stop step, the
Fossil server coming back (its unit's ExecStartPost runs `ocx node poke
--wait-server`, so responses that waited while the server was down are
written at once), and the path unit. The path unit does not fire
again while the unit it starts is still running, so it must not start the
node's service itself: a change that came as that service was exiting
(it stays up once started, but exits after failed passes) would wait for
the next one. It starts `ocx-wake@NAME` instead, which lives for a few
milliseconds and leaves a connection queued on the node's socket; systemd
then starts the node's service for it, or the running one reads it. While
the service is up systemd skips ocx-wake@NAME altogether. Standard library
only: these run on hot paths.
"""
from __future__ import annotations

import sys

# socket.py's wrapper builds its enums at import, a twentieth of a run's preparation's start (docs/node.md);
# a poke needs only the C module's socket, the same object socket.socket derives from.
from _socket import AF_UNIX, SOCK_STREAM
from _socket import socket as unix_socket

from .host_paths import node_socket_path


def poke(node: str, text: str) -> OSError | None:
    """Leave TEXT (a hint, never read as data) on NODE's socket; the error, if any."""
    try:
        connection = unix_socket(AF_UNIX, SOCK_STREAM)
        try:
            connection.settimeout(2)
            connection.connect(node_socket_path(node))
            connection.sendall(text.encode() + b"\n")
        finally:
            connection.close()
        return None
    except OSError as error:
        return error  # the path unit and the boot-time check still find the work (D26, D6)


def server_answers(url: str) -> bool:
    import http.client  # here, not above: the stop step and the hook poke without HTTP
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + "/index", timeout=2):
            return True
    except (OSError, http.client.HTTPException):  # not up, refused, cut off (URLError is an OSError)
        return False


def poke_when_server_answers(name: str, url: str | None = None, wait: float = 30.0) -> bool:
    """Poke NAME's socket, after waiting up to WAIT seconds for URL to answer: `ocx node poke`."""
    import time

    deadline = time.monotonic() + wait
    while url is not None and not server_answers(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    return poke(name, "poke") is None


if __name__ == "__main__":
    sys.exit(0 if len(sys.argv) == 2 and poke(sys.argv[1], "changed") is None else 1)
