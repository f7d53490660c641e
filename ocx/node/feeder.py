"""Inside a session's unit: hand the inbox's deliveries to the program (D13).

    python -m ocx.node.feeder INBOX -- PROGRAM [ARG...]

The unit's main process. It starts the program with a pipe as its standard
input and writes each delivery file the node drops into INBOX (named
`SEQUENCE-HASH.json`, one JSON line each) in sequence order, whole lines,
never two interleaved. It wakes on inotify, never on a timer, and never
lets a slow reader block the node: the node only writes files. When the
program ends, the feeder ends the same way, so systemd's Result, exit code
and signal are the program's (D4).

Standard library only; it is started once per session, so it stays small.
"""
from __future__ import annotations

import ctypes
import errno
import os
import selectors
import signal
import struct
import subprocess
import sys

IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


def _inotify(directory: str) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, directory.encode(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0:
        raise OSError(ctypes.get_errno(), f"inotify on {directory}")
    return fd


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except BlockingIOError:
        pass


def delivery_names(directory: str) -> list[str]:
    """The finished delivery files, in the order the node numbered them."""
    return sorted(n for n in os.listdir(directory) if n.endswith(".json") and n[:1].isdigit())


class Feeder:
    def __init__(self, inbox: str, argv: list[str]):
        self.inbox = inbox
        self.seen: set[str] = set()
        self.pending = b""
        self.reader_gone = False
        self.watch = _inotify(inbox)  # before the first listing: nothing slips between
        self.child = subprocess.Popen(argv, stdin=subprocess.PIPE, close_fds=True)
        self.pipe = self.child.stdin.fileno()
        os.set_blocking(self.pipe, False)
        self.pidfd = os.pidfd_open(self.child.pid)

    def collect(self) -> None:
        for name in delivery_names(self.inbox):
            if name in self.seen:
                continue
            self.seen.add(name)
            with open(os.path.join(self.inbox, name), "rb") as delivery:
                line = delivery.read()
            self.pending += line if line.endswith(b"\n") else line + b"\n"

    def write(self) -> None:
        while self.pending and not self.reader_gone:
            try:
                written = os.write(self.pipe, self.pending)
            except BlockingIOError:
                return
            except BrokenPipeError:
                self.reader_gone = True  # it closed its input; it may still run
                self.pending = b""
                return
            self.pending = self.pending[written:]

    def run(self) -> int:
        selector = selectors.DefaultSelector()
        selector.register(self.watch, selectors.EVENT_READ, "inbox")
        selector.register(self.pidfd, selectors.EVENT_READ, "ended")
        self.collect()
        self.write()
        registered = False
        while True:
            want_write = bool(self.pending) and not self.reader_gone
            if want_write != registered:
                if want_write:
                    selector.register(self.pipe, selectors.EVENT_WRITE, "writable")
                else:
                    selector.unregister(self.pipe)
                registered = want_write
            for key, _ in selector.select():
                if key.data == "ended":
                    return self.child.wait()
                if key.data == "inbox":
                    _drain(self.watch)
                    self.collect()
            self.write()


def _end_like(status: int) -> None:
    """Exit as the program did, so the unit reports the program's end (D4)."""
    if status < 0:
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m ocx.node.feeder INBOX -- PROGRAM [ARG...]")
    # systemd signals the whole control group on stop; the feeder outlives the
    # program so that the program's own end is what the unit reports.
    # A handler, not SIG_IGN: an ignored signal would stay ignored in the program.
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        feeder = Feeder(args[0], args[2:])
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.EACCES):
            print(f"ocx feeder: cannot start {args[2]}: {error.strerror}", file=sys.stderr)
            sys.exit(203)  # what systemd says when it cannot exec a program
        raise
    _end_like(feeder.run())


if __name__ == "__main__":
    main(sys.argv[1:])
