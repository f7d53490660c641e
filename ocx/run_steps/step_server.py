"""The node's step service: a run's preparation and stop step forked already loaded.

    python -I -m ocx.run_steps.step_server NAME     (units/ocx-steps@.service, socket-activated)

A run's unit starts its privileged steps through their door (step_door.py),
which hands each here over ocx-steps@NAME.socket: root's alone (0600, and
SO_PEERCRED's uid 0 checked again here), so no run and no other local user
can connect. This service imports the steps' modules once; for each step it
forks a process that reads the door's request (bounded, within
READ_SECONDS), checks its module is one of the two steps, joins the cgroup
of the door's unit (systemd then accounts for it, limits it with the run's
budget and ends it with the unit, as the step it replaces) with the door's
OOM score, and says it is ready. On the door's go it takes the door's
three streams (the unit's journal), exactly the door's environment and
"/" as its working directory (D41), and runs the step's `main`, whose exit
status it sends back. Anything short of that is said as "not taken" and
the door runs the step itself: a step runs once, here or there.

It runs as root because the steps do (C5, D19: the user table, the run's
home). It reads nothing a run wrote: the request is the door's, whose
argv the node wrote and whose environment systemd gave it (docs/security.md,
'The step service').
"""
from __future__ import annotations

import math
import os
import signal
import socket
import sys
import time
import traceback

from ..protocol.errors import OcxError
from ..systemd import cgroup, notify
from ..systemd.activation import RequestUnreadable, block, exactly, listener
from .step_door import ALLOWED, GO, READY

CONCURRENT = 64  # steps' processes at once; more wait in the socket's backlog (a burst prepares 2 a core)
READ_SECONDS = 10.0  # to receive a request, and the door's go, once connected
ARGV_MAX = 256 << 10
ENV_MAX = 256 << 10
NOT_TAKEN = 3  # a fork's exit status when the door runs the step itself


class NotTaken(OcxError):
    """The step is not run here: the door runs it itself."""


def read_request(connection: socket.socket) -> tuple[list[str], dict[str, str], float, list[int]]:
    """(argv, environment, the door's CPU in ms, its streams' descriptors), each bounded; the
    descriptors closed again when it raises."""
    fds: list[int] = []
    whole = False
    try:
        head, ancillary, _flags, _ = connection.recvmsg(4, socket.CMSG_SPACE(3 * 4))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(data[i:i + 4], sys.byteorder, signed=True) for i in range(0, len(data) - 3, 4)]
        if len(fds) != 3:
            raise NotTaken(f"{len(fds)} descriptors, not the door's three streams")
        head += exactly(connection, 4 - len(head)) if len(head) < 4 else b""
        argv = [os.fsdecode(a) for a in block(connection, ARGV_MAX, int.from_bytes(head, "big")).split(b"\0")]
        environ = {}
        for entry in block(connection, ENV_MAX).split(b"\0"):
            key, equals, value = entry.partition(b"=")
            if key and equals:
                environ[os.fsdecode(key)] = os.fsdecode(value)
        cpu_ms = _milliseconds(block(connection, 32))
        whole = True
        return argv, environ, cpu_ms, fds
    finally:
        if not whole:
            for fd in fds:
                os.close(fd)


def _milliseconds(text: bytes) -> float:
    """The door's CPU as it said it: a figure for the preparation's line, nothing decided by it."""
    try:
        value = float(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def _join_door(pid: int) -> str:
    """Into the door's cgroup, with its OOM score and file mode mask (the unit's UMask=): the unit's, as
    the step it replaces was. Returns the cgroup this process is in now, as the kernel says."""
    cgroup.join(pid)
    with open(f"/proc/{pid}/oom_score_adj") as theirs:
        score = theirs.read().strip()
    with open("/proc/self/oom_score_adj", "w") as own:
        own.write(score)
    os.umask(_umask_of(pid))
    return cgroup.unit_control_group() or "?"


def _umask_of(pid: int) -> int:
    """PID's file mode mask, as its /proc status says (Linux 4.7 on); OSError when it does not."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name == "Umask":
                mask = int(value.strip(), 8)
                if 0 <= mask <= 0o777:
                    return mask
    raise OSError(f"no umask of process {pid} in its status")


def run_step(connection: socket.socket) -> int:
    """In the step's own process: take the door's request, join its unit, and on its go run the step."""
    connection.settimeout(READ_SECONDS)
    fds: list[int] = []
    try:
        pid, uid, _unit = cgroup.peer(connection)
        if uid != 0:
            raise NotTaken(f"a door of uid {uid}, not root's")
        argv, environ, door_cpu_ms, fds = read_request(connection)
        if not argv or argv[0] not in ALLOWED:
            raise NotTaken(f"{argv[:1]} is not a step of a run's")
        joined = _join_door(pid)
        connection.sendall(READY)
        if connection.recv(1) != GO:
            raise NotTaken("the door gave up before its go, and runs the step itself")
    except (OSError, NotTaken, RequestUnreadable) as why:  # nothing of the step ran: the door runs it
        for fd in fds:
            os.close(fd)
        print(f"ocx-steps: a step not taken: {why}", file=sys.stderr, flush=True)
        return NOT_TAKEN
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(environ)
    os.chdir("/")  # D41, as each step does first
    print(f"{argv[0].rsplit('.', 1)[-1]}: forked already loaded by the node's step service, in {joined} "
          f"(its door's start {door_cpu_ms:.0f} ms of CPU)", flush=True)
    code = _stepped(argv, door_cpu_ms)
    try:
        connection.settimeout(READ_SECONDS)
        connection.sendall(bytes([code & 0xFF]))
    except OSError:  # the door is gone (its unit stopped): the unit's end is systemd's to tell
        pass
    return code


def _stepped(argv: list[str], door_cpu_ms: float) -> int:
    """The step's `main`, its exit status as its own process's would be."""
    try:
        return int(sys.modules[argv[0]].main(argv[1:], door_cpu_ms=door_cpu_ms) or 0)
    except SystemExit as leaving:
        return leaving.code if isinstance(leaving.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def preload() -> None:
    """What a step imports, now and once: the cost that forking saves (ALLOWED, and what they import late)."""
    from ..fossil import repository  # noqa: F401  (a preparation that pulls)
    from ..node import runner_homes  # noqa: F401  (a runner page with homes)
    from ..systemd import sd_bus  # (a session waiting for the one before it, in_order.py)
    from . import prepare, stop_step  # noqa: F401

    try:
        sd_bus.library()  # libsystemd opened once, not in every session's preparation
    except sd_bus.BusUnreadable:  # none here: a waiter finds that out itself, and does not wait
        pass


def listener_of(argv: list[str]) -> socket.socket:
    """systemd's socket (LISTEN_FDS), or one bound here (--listen PATH: tests)."""
    return listener(argv, "ocx-steps")


def serve(listening: socket.socket) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    preload()
    children: set[int] = set()
    taken = 0
    listening.settimeout(1.0)  # wake now and then to collect finished steps
    notify.ready("no step yet")
    while True:
        _reap(children, block=len(children) >= CONCURRENT)
        try:
            connection, _ = listening.accept()
        except (TimeoutError, InterruptedError):
            continue
        except OSError as error:  # out of descriptors, say: wait, never stop
            print(f"ocx-steps: accept failed: {error}", file=sys.stderr, flush=True)
            time.sleep(0.5)
            continue
        try:
            pid = os.fork()
        except OSError as error:  # the door, told nothing, runs the step itself
            print(f"ocx-steps: cannot fork for a step: {error}", file=sys.stderr, flush=True)
            connection.close()
            continue
        if pid == 0:
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                listening.close()
                code = run_step(connection)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        connection.close()
        children.add(pid)
        taken += 1
        notify.status(f"{taken} steps handed to it since {time.strftime('%Y-%m-%d %H:%M:%S')}")


def _reap(children: set[int], block: bool) -> None:
    while children:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        block = False


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        raise SystemExit("usage: python -m ocx.run_steps.step_server NAME [--listen PATH]")
    serve(listener_of(argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
