"""A run's privileged step handed to the node's step service, or run here if it does not take it.

    python -I -S -c RUN SOCKET MODULE ARGS   (node_service/run_units.python_module)

A run's preparation and stop step are root's Python, started by its unit
(ExecStartPre, ExecStopPost, `+`). Their interpreter's start and imports
were half of the preparation's CPU and most of the stop step's, paid again
for every run of a burst (docs/node.md 'Steps forked
already loaded'). So this door, which imports nothing but the standard
library's built-in socket, connects to the node's step service
(step_server.py, ocx-steps@NAME.socket: root's alone, 0600), sends it the
step's argv, its environment (what systemd gave the step: SERVICE_RESULT
and the rest) and its three standard streams (the unit's journal), and
waits. The service forks a process already holding the step's modules,
moves it into this unit's cgroup (so systemd accounts for it, limits it
and kills it with the unit, as it would this process), says it is ready,
and on this door's go runs MODULE's `main`; its exit status becomes this
process's.

Never twice, never not at all: until the door sends its go, nothing of the
step has run, and if the service is not there, not ready within
READY_SECONDS, or says it will not take it, the door runs MODULE here
itself, as the unit did before the service existed. Once it sent its go, it
only waits: a step killed meanwhile is an exit 1, as a killed step is.
"""
from __future__ import annotations

import _socket
import os
import sys
import time  # built in: its process clock, not os.times' ticks of 10 ms

CONNECT_SECONDS = 2.0
# The first connection starts the service (socket activation): its Python start and imports are in this.
READY_SECONDS = 15.0
READY, GO = b"R", b"G"
ALLOWED = ("ocx.run_steps.prepare", "ocx.run_steps.stop_step")  # the service runs these and no other


def block(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def request(argv: list[str], environ: dict[str, str], cpu_ms: float) -> bytes:
    """ARGV (MODULE first), ENVIRON and the door's own CPU so far, as step_server.read_request reads them."""
    return (block(b"\0".join(os.fsencode(a) for a in argv))
            + block(b"\0".join(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in environ.items()))
            + block(f"{cpu_ms:.1f}".encode()))


def _own_cpu_ms() -> float:
    return time.process_time() * 1000


def handed(path: str, argv: list[str]) -> int | None:
    """The step's exit status when the service at PATH ran it; None when it did not take it."""
    if not argv or argv[0] not in ALLOWED:
        return None
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.settimeout(CONNECT_SECONDS)
        connection.connect(path)
        streams = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        connection.sendmsg([request(argv, dict(os.environ), _own_cpu_ms())],
                           [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, streams)])
        connection.settimeout(READY_SECONDS)
        if connection.recv(1) != READY:
            return None
        connection.sendall(GO)
    except OSError:  # no service, or not ready in time: nothing of the step ran there
        connection.close()
        return None
    connection.settimeout(None)  # the step's own time now: its unit's timeouts bound it, as they bound this
    try:
        status = connection.recv(1)
    except OSError:
        status = b""
    connection.close()
    return status[0] if status else 1


def run_here(argv: list[str]) -> int:
    module = __import__(argv[0], fromlist=["main"])
    return int(module.main(argv[1:]) or 0)


def main(path: str, argv: list[str]) -> int:
    status = handed(path, argv)
    return run_here(argv) if status is None else status
