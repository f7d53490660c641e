"""Waking the node's service by hand or from a unit (D26): `ocx node poke NAME`.

The Fossil server's unit runs it once the server answers (ExecStartPost),
so responses that waited while the server was down are written at once.
The node service's unit runs it with --if-behind when the service has
exited (ExecStopPost): a receipt that came as it was exiting, when its path
unit could not fire for it, queues a poke, and systemd starts it again.
"""
from __future__ import annotations

import time
import urllib.request

from .ended import poke


def server_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/index", timeout=2):
            return True
    except Exception:
        return False


def behind(repository: str, state_dir: str) -> bool:
    """Whether the repository holds a receipt after the node's mark."""
    import json
    import os

    from ..fossil.repository import Repository

    try:
        with open(os.path.join(state_dir, "mark.json")) as handle:
            mark = int(json.load(handle)["rcvid"])
    except (OSError, ValueError, KeyError):
        return True
    with Repository(repository) as opened:
        return opened.max_rcvid() > mark


def poke_node(name: str, url: str | None = None, wait: float = 30.0) -> bool:
    """Poke NAME's socket, after waiting up to WAIT seconds for URL to answer."""
    deadline = time.monotonic() + wait
    while url is not None and not server_answers(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    return poke(name, "poke")
