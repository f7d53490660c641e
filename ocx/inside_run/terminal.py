"""A session's terminal, held by its feeder inside the unit (D32).

The session's program runs with a pseudo-terminal's slave as its standard
input, output and error and as its controlling terminal, in a session of
its own. The feeder holds the master: it writes the delivery lines (D13)
and an attached person's keystrokes to it, and copies what the program
prints to its own standard output (the unit's journal) and to every client
attached through the unit's terminal socket (`ocx attach`).

Standard library only: it runs inside every session's unit.
"""
from __future__ import annotations

import _socket  # the C module alone: `socket` imports enum and selectors (poller.py)
import errno
import fcntl
import os
import struct
import termios

from .poller import EVENT_READ, EVENT_WRITE, Poller

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Callable

ROWS, COLS = 24, 80  # a size to report until someone sets another; 0x0 confuses programs
TAIL_BYTES = 16384  # what a new attacher is shown first: the screen's recent past
CLIENT_BACKLOG_BYTES = 1 << 20  # an attacher this far behind is let go, never waited for
ROOT = 0
IUTF8 = getattr(termios, "IUTF8", 0o40000)  # Linux's value; Python 3.11 does not name it
# What socket.accept wraps: a new connection's descriptor and its address (typeshed does not list it).
_ACCEPT: Callable[[_socket.socket], tuple[int, object]] = vars(_socket.socket)["_accept"]


def open_terminal() -> tuple[int, int]:
    """A new pseudo-terminal (master, slave), in the mode a session starts in.

    Input is not a line editor: no echo (a delivery is not printed back into
    the journal), no canonical mode (so no 4095-byte line limit: a delivery
    line of any length passes byte-exact) and no flow control (Ctrl-S would
    freeze the program's output). Signals stay on, so an attached person's
    Ctrl-C interrupts as at any terminal, and Enter's \\r reaches the program
    as \\n. Delivery lines hold no control byte (JSON escapes them all), so
    none of this can touch them. Output is a terminal's: \\n becomes \\r\\n.
    The program may change any of it, as a full-screen program does.
    """
    master, slave = os.openpty()
    iflag, oflag, cflag, lflag, ispeed, ospeed, chars = termios.tcgetattr(slave)
    iflag &= ~(termios.IXON | termios.IXOFF | termios.ISTRIP | termios.INLCR | termios.IGNCR)
    iflag |= termios.ICRNL | IUTF8
    lflag &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.IEXTEN)
    lflag |= termios.ISIG
    oflag |= termios.OPOST | termios.ONLCR
    chars[termios.VMIN], chars[termios.VTIME] = 1, 0
    termios.tcsetattr(slave, termios.TCSANOW, [iflag, oflag, cflag, lflag, ispeed, ospeed, chars])
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    os.set_blocking(master, False)
    return master, slave


class JournalLines:
    """The terminal's \\r\\n line ends as the journal's \\n, across chunk borders."""

    def __init__(self) -> None:
        self.held_cr = False

    def __call__(self, chunk: bytes) -> bytes:
        if self.held_cr:
            chunk, self.held_cr = b"\r" + chunk, False
        if chunk.endswith(b"\r"):
            chunk, self.held_cr = chunk[:-1], True
        return chunk.replace(b"\r\n", b"\n")

    def rest(self) -> bytes:
        held, self.held_cr = self.held_cr, False
        return b"\r" if held else b""


class Attached:
    """One client of the terminal socket, and what is still to be sent to it."""

    def __init__(self, sock: _socket.socket, backlog: bytes):
        self.sock = sock
        self.out = bytearray(backlog)
        self.events = EVENT_READ


def peer_uid(sock: _socket.socket) -> int:
    uid: int
    credentials = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid


class TerminalServer:
    """The unit's terminal socket: output to every attached client, their keystrokes back.

    Only root may attach (the host's `ocx attach`, D32): the socket's
    directory is the unit's own (0700, its dynamic user), and a peer that is
    not root, such as the program itself, is closed at once.
    """

    def __init__(self, path: str, selector: Poller, journal_fd: int = 1):
        self.path = path
        self.selector = selector
        self.journal_fd = journal_fd
        self.journal_lines = JournalLines()
        self.tail = bytearray()
        self.clients: list[Attached] = []
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        # Bound under a name of its own and renamed once listening: a socket
        # file that exists refuses no connection (an attach that comes first
        # would read `ECONNREFUSED` as the session having ended).
        unready = f"{path}.unready"
        try:
            os.unlink(unready)
        except FileNotFoundError:
            pass
        self.listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.listener.bind(unready)
        self.listener.listen(8)
        os.rename(unready, path)
        self.listener.setblocking(False)
        selector.register(self.listener, EVENT_READ, ("terminal", None))

    # -- what the program printed -----------------------------------------------

    def output(self, chunk: bytes) -> None:
        """To the journal (blocking, as any unit's output), then to each client (never blocking)."""
        _write_all(self.journal_fd, self.journal_lines(chunk))
        self.tail += chunk
        if len(self.tail) > TAIL_BYTES:
            del self.tail[: len(self.tail) - TAIL_BYTES]
            start = self.tail.find(b"\n")  # from a line's start, where one is near
            if 0 <= start < TAIL_BYTES // 2:
                del self.tail[: start + 1]
        for client in list(self.clients):
            client.out += chunk
            if len(client.out) > CLIENT_BACKLOG_BYTES:
                self._drop(client)  # a slow attacher never holds the session up
            else:
                self._watch(client)  # sent when writable, by ready()

    # -- clients --------------------------------------------------------------------

    def ready(self, client: Attached | None) -> bytes:
        """The listener or CLIENT can be read (or written): the keystrokes it sent, if any."""
        if client is None:
            self._accept()
            return b""
        try:  # its keys first: a client may send and close at once
            keys = client.sock.recv(65536)
        except BlockingIOError:
            keys = None
        except OSError:
            keys = b""
        if keys == b"":
            self._drop(client)
            return b""
        if client.out:
            self._send(client)
        return keys or b""

    def _accept(self) -> None:
        try:
            fd, _ = _ACCEPT(self.listener)
        except (BlockingIOError, ConnectionAbortedError):
            return
        sock = _socket.socket(fileno=fd)
        if peer_uid(sock) != ROOT:
            sock.close()
            return
        sock.setblocking(False)
        client = Attached(sock, bytes(self.tail))
        self.clients.append(client)
        self.selector.register(sock, client.events, ("terminal", client))
        self._watch(client)  # all its I/O in ready(), its keys read first: nothing it typed is lost

    def _send(self, client: Attached) -> None:
        try:
            while client.out:
                sent = client.sock.send(client.out)
                del client.out[:sent]
        except BlockingIOError:
            pass
        except OSError:
            self._drop(client)
            return
        self._watch(client)

    def _watch(self, client: Attached) -> None:
        wanted = EVENT_READ | (EVENT_WRITE if client.out else 0)
        if wanted != client.events:
            client.events = wanted
            self.selector.modify(client.sock, wanted, ("terminal", client))

    def _drop(self, client: Attached) -> None:
        if client in self.clients:
            self.clients.remove(client)
            self.selector.unregister(client.sock)
            client.sock.close()

    def close(self) -> None:
        """The program ended: its last output to the journal and, briefly, to each client."""
        _write_all(self.journal_fd, self.journal_lines.rest())
        for client in list(self.clients):
            try:
                client.sock.settimeout(1.0)
                client.sock.sendall(client.out)
            except OSError:
                pass
            self._drop(client)
        self.selector.unregister(self.listener)
        self.listener.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def read_master(master: int) -> bytes | None:
    """What the program printed; b"" for nothing yet, None once no one holds the terminal."""
    try:
        return os.read(master, 65536)
    except BlockingIOError:
        return b""
    except OSError as error:
        if error.errno == errno.EIO:  # every holder of the slave closed it
            return None
        raise
