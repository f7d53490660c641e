"""Calling a tool through a run's tool socket (C6, D22, D34): the client's end,
which `ocx TOOL` uses inside a `no_password` run; ocx/tool_service/tool_socket.py
serves the other end. Wire: one JSON line `{"tool": NAME, "input": {...}}` in,
one JSON line (the tool's answer) out."""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from ..node.run_layout import TOOLS_INSIDE
from ..node.socket_served import SOCKET_NAME, short_path


def inside_socket() -> Path:
    return Path(TOOLS_INSIDE) / SOCKET_NAME


def _connect(connection: socket.socket, path: Path, wait: float) -> None:
    # The node serves a new run's socket moments after its unit starts.
    deadline = time.monotonic() + wait
    while True:
        try:
            with short_path(path) as reachable:
                connection.connect(reachable)
            return
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def ask(path: Path | str, tool: str, raw: object, timeout: float = 600.0, wait: float = 20.0) -> dict[str, Any]:
    """Call TOOL through a tool socket; the answer as JSON data."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout)
        _connect(connection, Path(path), wait)
        connection.sendall(json.dumps({"tool": tool, "input": raw}).encode() + b"\n")
        connection.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer
