"""Inside a session's unit: hand the inbox's deliveries to the program (D13).

    python -I -m ocx.inside_run.feeder INBOX [--last-line FILE] [--terminal SOCKET] [--cwd DIRECTORY]
                              -- PROGRAM [ARG...]

The unit's main process. It starts the program with a pipe as its standard
input (or, with `--terminal`, under a terminal it holds: terminal.py, D32)
and writes each delivery file the node drops into INBOX (named
`SEQUENCE-HASH.json`, one JSON line each) in sequence order, whole lines,
never two interleaved. It wakes on inotify, never on a timer, and never
lets a slow reader block the node: the node only writes files. When the
program ends, the feeder ends the same way, so systemd's Result, exit code
and signal are the program's (D4).

D17's `cpu` budget is not the feeder's: it runs as the run's user, so the
run could stop it. A timer outside the run holds it (ocx.run_steps.cpu_watch).

With `--terminal SOCKET`, what the program prints goes to the journal and
to whoever is attached through SOCKET (`ocx attach`, D32), whose
keystrokes go to the program; a delivery line is always written whole, so
keystrokes never land inside one.

`--cwd` is where the program starts: the run's home, or a `command` run's
checkout. The unit itself has no WorkingDirectory, since systemd would run
its privileged steps there too, as root (D41).

A `command` run (C2) has no deliveries: INBOX `-` gives the program no
input, and `--last-line FILE` passes its output on to the journal while
keeping its last line in FILE, the reason of its `ci` verdict (V1).

Standard library only; it is started once per session, so it stays small.
"""
from __future__ import annotations

import errno
import os
import sys

from ..node.host_paths import KEEP_ENVIRONMENT as KEEP
from .poller import EVENT_READ, EVENT_WRITE, Poller
from .spawn import SIG_DFL, SIGKILL, SIGSTOP, SIGTERM, set_handler, spawn

# The inbox's watch (inotify: ctypes) and the terminal (terminal.py: socket, pty) are imported where
# a run has them: a `command` run has neither, and its feeder starts without them.
TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from .terminal import TerminalServer


def program_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Exactly the variables the node set (D15): systemd adds its own
    (INVOCATION_ID, JOURNAL_STREAM, LOGNAME, STATE_DIRECTORY…), which the
    program does not get. Without the list, the environment passes as it is."""
    environ = dict(os.environ if environ is None else environ)
    keep = environ.pop(KEEP, None)
    if keep is None:
        return environ
    names = set(keep.split(","))
    return {name: value for name, value in environ.items() if name in names}


def delivery_names(directory: str) -> list[str]:
    """The finished delivery files, in the order the node numbered them."""
    return sorted(n for n in os.listdir(directory) if n.endswith(".json") and n[:1] in "0123456789")


NO_INBOX = "-"


def _watch(inbox: str) -> int:
    from ..node.inotify import IN_CLOSE_WRITE, IN_MOVED_TO, watch

    return watch(inbox, IN_MOVED_TO | IN_CLOSE_WRITE)


class LastLine:
    """The program's output, passed on whole, and its last non-empty line kept."""

    def __init__(self, path: str):
        self.path = path
        self.tail = b""
        self.last = b""

    def take(self, chunk: bytes) -> None:
        os.write(sys.stdout.fileno(), chunk)
        lines = (self.tail + chunk).split(b"\n")
        self.tail = lines.pop()
        self.last = next((line for line in reversed(lines) if line.strip()), self.last)

    def save(self) -> None:
        """Kept in the run's home, the program's to shape (a link, a FIFO, a
        read-only file): never followed or waited on here, and whatever is
        there the node reads only through its bounded reader (D41)."""
        last = self.tail if self.tail.strip() else self.last
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        except OSError:
            return  # the program put something else there: the node reads what it is, boundedly
        with os.fdopen(fd, "wb") as out:
            out.write(last.strip()[-1000:])


class Feeder:
    def __init__(self, inbox: str, argv: list[str], output: LastLine | None = None, terminal: str | None = None,
                 cwd: str | None = None):
        self.inbox = inbox
        self.output = output
        self.seen: set[str] = set()
        self.pending = b""  # delivery lines and keystrokes, each appended whole, written in order
        self.reader_gone = inbox == NO_INBOX
        self.selector = Poller()
        # The watch before the first listing: nothing slips between.
        self.watch = None if inbox == NO_INBOX else _watch(inbox)
        self.terminal: TerminalServer | None = None
        if terminal is not None:
            from .terminal import TerminalServer, open_terminal

            master, slave = open_terminal()
            try:
                # A session of its own, the terminal its controlling one (Ctrl-C reaches it).
                self.child = spawn(argv, program_environment(), (slave, slave, slave), cwd, terminal=True)
            finally:
                os.close(slave)  # only the program holds it: its end is the terminal's
            self.pipe = self.source = master
            self.terminal = TerminalServer(terminal, self.selector)
        else:
            # The program's ends of its pipes (or /dev/null), closed here once it holds them.
            (stdin, self.pipe) = os.pipe() if inbox != NO_INBOX else (os.open(os.devnull, os.O_RDONLY), -1)
            (self.source, stdout) = os.pipe() if output else (-1, 1)
            try:
                self.child = spawn(argv, program_environment(), (stdin, stdout, stdout if output else 2), cwd)
            finally:
                os.close(stdin)
                if output:
                    os.close(stdout)
            if self.pipe >= 0:
                os.set_blocking(self.pipe, False)
        self.pidfd = os.pidfd_open(self.child.pid)
        self.relay_open = self.source >= 0
        if self.source >= 0:
            os.set_blocking(self.source, False)

    def _read(self) -> bytes | None:
        """What the program printed: b"" for nothing yet, None at the end of its output."""
        if self.terminal is not None:
            from .terminal import read_master  # imported with the terminal (__init__)

            return read_master(self.source)
        try:
            return os.read(self.source, 65536) or None
        except BlockingIOError:
            return b""

    def _pass_on(self, chunk: bytes) -> None:
        if self.terminal is not None:
            self.terminal.output(chunk)
        else:
            assert self.output is not None  # without a terminal, a source is the output's pipe
            self.output.take(chunk)

    def relay(self) -> bool:
        """Pass on what the program printed; False at the end of its output."""
        chunk = self._read()
        if chunk:
            self._pass_on(chunk)
        return chunk is not None

    def drain(self) -> None:
        """What the program printed before it ended, without waiting on its leftovers."""
        while self.relay_open and (chunk := self._read()):
            self._pass_on(chunk)

    def finish(self, status: int) -> int:
        """The program ended: what it printed last, then its status."""
        self.drain()
        if self.output is not None:
            self.output.save()
        if self.terminal is not None:
            self.terminal.close()
        return status

    def collect(self) -> None:
        if self.inbox == NO_INBOX:
            return
        for name in delivery_names(self.inbox):
            if name in self.seen:
                continue
            self.seen.add(name)
            with open(os.path.join(self.inbox, name), "rb") as delivery:
                line = delivery.read()
            self.pending += line if line.endswith(b"\n") else line + b"\n"

    def inbox_changed(self) -> None:
        from ..node.inotify import drain  # imported with the watch (_watch)

        assert self.watch is not None  # registered only when there is one
        drain(self.watch)
        self.collect()

    def write(self) -> None:
        while self.pending and not self.reader_gone:
            try:
                written = os.write(self.pipe, self.pending)
            except BlockingIOError:
                return
            except OSError as error:
                if not isinstance(error, BrokenPipeError) and error.errno != errno.EIO:
                    raise
                self.reader_gone = True  # it closed its input (EIO: its terminal); it may still run
                self.pending = b""
                return
            self.pending = self.pending[written:]

    def watch_io(self) -> None:
        """The program's output always read; its input watched only while something waits to go in.
        Under a terminal both are the master, one registration."""
        wanted: dict[int, int] = {}
        if self.relay_open:
            wanted[self.source] = EVENT_READ
        if self.pending and not self.reader_gone:
            wanted[self.pipe] = wanted.get(self.pipe, 0) | EVENT_WRITE
        for fd in {self.source, self.pipe} - {-1}:
            events, held = wanted.get(fd, 0), self.io_events.get(fd, 0)
            if events == held:
                continue
            if not held:
                self.selector.register(fd, events, "io")
            elif not events:
                self.selector.unregister(fd)
            else:
                self.selector.modify(fd, events, "io")
            self.io_events[fd] = events

    def run(self) -> int:
        selector = self.selector
        self.io_events: dict[int, int] = {}
        if self.watch is not None:
            selector.register(self.watch, EVENT_READ, "inbox")
        selector.register(self.pidfd, EVENT_READ, "ended")
        self.collect()
        self.write()
        while True:
            self.watch_io()
            for key, events in selector.select():
                if key.data == "ended":
                    return self.finish(self.child.wait())
                if key.data == "io" and events & EVENT_READ and not self.relay():
                    self.relay_open = False
                if key.data == "inbox":
                    self.inbox_changed()
                if isinstance(key.data, tuple):  # the terminal's socket: an attacher, or its keystrokes
                    assert self.terminal is not None
                    keys = self.terminal.ready(key.data[1])
                    if not self.reader_gone:
                        self.pending += keys
            self.write()


def _end_like(status: int) -> None:
    """Exit as the program did, so the unit reports the program's end (D4)."""
    if status < 0:
        if -status not in (SIGKILL, SIGSTOP):
            set_handler(-status, SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def parse(args: list[str]) -> tuple[str, LastLine | None, str | None, str | None, list[str]]:
    if "--" not in args or args.index("--") in (0, len(args) - 1):
        sys.exit("usage: python -m ocx.inside_run.feeder INBOX [--last-line FILE] [--terminal SOCKET]"
                 " [--cwd DIRECTORY] -- PROGRAM [ARG...]")
    split = args.index("--")
    head, program = args[:split], args[split + 1 :]
    options = dict(zip(head[1::2], head[2::2], strict=False))  # an option without its value is dropped
    output = LastLine(options["--last-line"]) if "--last-line" in options else None
    return head[0], output, options.get("--terminal"), options.get("--cwd"), program


class StopRelay:
    """systemd signals the whole control group on stop; the feeder outlives
    the program so that the program's own end is what the unit reports. A
    stop that comes before the program has started (or between its fork and
    its exec, where it is lost) would leave the program running until
    TimeoutStopSec: the feeder keeps it and passes it on once the program
    exists (seen: a run ended for D24 0.4 s after its start ran on)."""

    def __init__(self) -> None:
        self.asked = False
        # A handler, not SIG_IGN: an ignored signal would stay ignored in the program.
        set_handler(SIGTERM, self._heard)

    def _heard(self, *_: object) -> None:
        self.asked = True

    def started(self, pid: int) -> None:
        """The program now exists: a stop heard before this reaches it too."""
        set_handler(SIGTERM, lambda *_: None)  # from here on systemd's own reaches the program
        if self.asked:
            try:
                os.kill(pid, SIGTERM)
            except ProcessLookupError:
                pass


def main(args: list[str]) -> None:
    inbox, output, terminal, cwd, program = parse(args)
    stops = StopRelay()
    try:
        feeder = Feeder(inbox, program, output, terminal, cwd)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.EACCES):
            print(f"ocx feeder: cannot start {program[0]}: {error.strerror}", file=sys.stderr)
            sys.exit(203)  # what systemd says when it cannot exec a program
        raise
    stops.started(feeder.child.pid)
    _end_like(feeder.run())


if __name__ == "__main__":
    main(sys.argv[1:])
