"""Waking the node's service by hand or from a unit (D26): `ocx node poke NAME`.

The Fossil server's unit runs it once the server answers (ExecStartPost),
so responses that waited while the server was down are written at once.
"""
from __future__ import annotations

import time
import urllib.request

from ..wake import poke


def server_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/index", timeout=2):
            return True
    except Exception:
        return False


def poke_node(name: str, url: str | None = None, wait: float = 30.0) -> bool:
    """Poke NAME's socket, after waiting up to WAIT seconds for URL to answer."""
    deadline = time.monotonic() + wait
    while url is not None and not server_answers(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    return poke(name, "poke") is None
