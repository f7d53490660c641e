"""The node's page, kept up: ocx-page@NAME.service (units/ocx-page@.service).

    python -I -m ocx.page.page_service /etc/ocx/NAME.json [--listen PATH]

Fossil starts its ext program for every request; the page's Python start
and imports were most of what a look at the page cost (docs/console.md,
'Fast'). This service imports the page once, then answers each
request that the door (page_door.py, the ext program) hands it over its
socket, which systemd holds (ocx-page@NAME.socket, 0600, the Fossil
server's account's: no run and no other local user can connect and claim
a login). It runs as that same account, with the same groups, as the ext
program did (User=, SupplementaryGroups=systemd-journal): it can do
nothing the page could not.

Each request is run in a process forked from this one for it alone: the
page's code is already imported there, and the request gets what Fossil
gives an ext program (exactly its environment, as os.environ, which the
tools' own programs inherit; its working directory; its body), runs
web.py's answer as the ext program did, and exits. A request that fails,
hangs (it is killed after REQUEST_SECONDS) or crashes its process leaves
this one untouched; at most CONCURRENT run at once, the others wait in the
socket's queue. Its unit's status line counts what it answered.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback

from ..systemd.activation import RequestUnreadable, block, listener

CONCURRENT = 8  # requests run at once; more wait in the socket's backlog
REQUEST_SECONDS = 540  # a request's process is killed after this (Fossil's own bound is 600 s)
READ_SECONDS = 10.0  # to receive a request, and the door's go, once connected
ENV_MAX = 256 << 10
CWD_MAX = 4096
BODY_MAX = 8 << 20  # the door's own bound (page_door.BODY_MAX)


BadRequest = RequestUnreadable  # what the door sent is not a whole request


def read_request(connection: socket.socket) -> tuple[dict[str, str], bytes, bytes]:
    """(environment, working directory, body), each bounded."""
    environ = {}
    for entry in block(connection, ENV_MAX).split(b"\0"):
        key, equals, value = entry.partition(b"=")
        if key and equals:
            environ[os.fsdecode(key)] = os.fsdecode(value)
    cwd = block(connection, CWD_MAX)
    body = block(connection, BODY_MAX)
    return environ, cwd, body


def answer_one(connection: socket.socket, config_file: str) -> int:
    """In the request's own process: the page's answer, as web.py's main gives it to Fossil."""
    signal.alarm(REQUEST_SECONDS)  # SIGALRM's default action ends this process, and only it
    connection.settimeout(READ_SECONDS)
    try:
        environ, cwd, body = read_request(connection)
        connection.sendall(b"R")
        if connection.recv(1) != b"G":
            return 3  # the door gave up and runs the page itself: never run a request twice
    except (OSError, BadRequest) as error:
        print(f"ocx-page: a request not taken: {error}", file=sys.stderr)
        return 3
    os.environ.clear()
    os.environ.update(environ)
    try:
        os.chdir(cwd)
    except OSError:
        pass
    from .web import cgi_answer

    status, output = b"0", b""
    try:
        output = cgi_answer([config_file], environ, body).encode("utf-8", "surrogateescape")
    except Exception:
        traceback.print_exc()  # to the journal, as the ext program's went to Fossil's
        status = b"1"
    connection.settimeout(READ_SECONDS)
    try:
        connection.sendall(status + output)
    except OSError as error:
        print(f"ocx-page: an answer not delivered: {error}", file=sys.stderr)
        return 4
    return 0 if status == b"0" else 1


def prepare() -> None:
    """Import now what any request would import later (the console, the tools, the
    readers, libsystemd): this is the cost that staying up saves."""
    import struct  # noqa: F401  (cgroup's, imported when it reads a unit's figures)

    from ..node import config  # noqa: F401
    from ..protocol import messages  # noqa: F401  (a verdict naming a record)
    from ..reading import verdicts  # noqa: F401  (a branch's queue: the verdict rules, ~120 ms alone)
    from ..systemd import cgroup, journal_tail, sd_bus, unit_figures  # noqa: F401
    from . import web, web_nodes, web_tools  # noqa: F401  (web_tools: pydantic and the six tools)
    from .console import catalog, page  # noqa: F401

    catalog.tools()
    try:
        sd_bus.library()
    except sd_bus.BusUnreadable:
        pass


def listener_of(argv: list[str]) -> socket.socket:
    """systemd's socket (LISTEN_FDS), or one bound here (--listen PATH: tests, by hand)."""
    return listener(argv, "ocx-page")


class Tally:
    """What it answered, shown as its unit's status (systemctl status ocx-page@NAME)."""

    def __init__(self) -> None:
        self.answered = self.failed = self.not_taken = 0
        self.since = time.strftime("%Y-%m-%d %H:%M:%S")

    def count(self, status: int) -> None:
        code = os.waitstatus_to_exitcode(status)
        if code == 0:
            self.answered += 1
        elif code == 3:
            self.not_taken += 1
        else:
            self.failed += 1

    def line(self) -> str:
        return (f"answered {self.answered} requests, {self.failed} failed, {self.not_taken} not taken, "
                f"since {self.since}")


def _reap(children: set[int], tally: Tally, block: bool) -> bool:
    """Collect finished requests' processes; True if any was."""
    from ..systemd import notify

    reaped = False
    while children:
        try:
            pid, status = os.waitpid(-1, 0 if block and not reaped else os.WNOHANG)
        except ChildProcessError:
            children.clear()
            break
        if pid == 0:
            break
        children.discard(pid)
        tally.count(status)
        reaped = True
    if reaped:
        notify.status(tally.line())
    return reaped


def serve(config_file: str, listener: socket.socket) -> None:
    from ..systemd import notify

    # A stop ends the loop as an exit, so what runs at exit runs (a test's coverage, say).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    prepare()
    tally = Tally()
    children: set[int] = set()
    listener.settimeout(1.0)  # wake now and then to collect finished requests
    notify.ready(tally.line())
    while True:
        try:
            _take_one(listener, config_file, children, tally)
        except Exception:  # nothing one request brings stops the page: say it, and take the next
            traceback.print_exc()
            time.sleep(0.5)


def _take_one(listener: socket.socket, config_file: str, children: set[int], tally: Tally) -> None:
    """Wait for the next request and start its own process."""
    _reap(children, tally, block=len(children) >= CONCURRENT)
    try:
        connection, _ = listener.accept()
    except (TimeoutError, InterruptedError):
        return
    except OSError as error:  # out of descriptors, say: wait, never stop
        print(f"ocx-page: accept failed: {error}", file=sys.stderr)
        time.sleep(0.5)
        return
    try:
        pid = os.fork()
    except OSError as error:  # the door, answered nothing, runs the page itself
        print(f"ocx-page: cannot fork for a request: {error}", file=sys.stderr)
        connection.close()
        return
    if pid == 0:
        code = 1
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a request's process is simply ended
            listener.close()
            code = answer_one(connection, config_file)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    connection.close()
    children.add(pid)


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        raise SystemExit("usage: python -m ocx.page.page_service /etc/ocx/NAME.json [--listen PATH]")
    serve(argv[0], listener_of(argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
