"""The host's end of a session's terminal (D32): connect to the unit's
terminal socket (run_layout.py RunHome.terminal_socket), show what the program
prints, pass keystrokes to it.

The other end is the feeder inside the unit (terminal.py). Standard
library only.
"""
from __future__ import annotations

import os
import selectors
import signal
import socket
import termios
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..protocol.errors import OcxError
from ..systemd.cgroup import peer

DETACH = b"\x1d"  # Ctrl-]: as telnet's escape, a key no shell or agent needs
DETACH_NAME = "Ctrl-]"
DETACHED, ENDED, HUNG_UP = "detached", "the session ended", "the terminal hung up"


class NoTerminal(OcxError):
    """The session has no terminal this process can reach."""


def connect(path: Path, unit: str | None = None) -> socket.socket:
    """A connection to the terminal at PATH. The socket's directory is the
    run's own (D32), so the name may be a link the run put there to some
    other socket (D41): with UNIT, the other end must be a process of that
    unit, or nothing is sent or read."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except FileNotFoundError:
        sock.close()
        raise NoTerminal(f"no terminal at {path}: the session is not running (or is not a session)") from None
    except PermissionError:
        sock.close()
        raise NoTerminal(f"{path} is the session's own: only root on the node's host may attach (D32)") from None
    except ConnectionRefusedError:
        sock.close()
        raise NoTerminal(f"nothing answers at {path}: the session has ended") from None
    if unit is not None and peer(sock)[2] != unit:
        sock.close()
        raise NoTerminal(f"{path} leads to a process outside {unit}: not its terminal (D41)")
    return sock


@contextmanager
def raw_mode(fd: int) -> Iterator[None]:
    """The local terminal passes every key on as it is typed, and is put back after."""
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        except termios.error:
            pass  # the terminal is gone (hung up): nothing to restore


class HangUps:
    """SIGHUP and SIGTERM noted, not fatal, for as long as it is entered: a
    dropped connection ends an attachment, and its post is still written (C3).
    Only from the main thread (signal.set_wakeup_fd)."""

    def __init__(self) -> None:
        self.noted = False

    def _note(self, *_args: object) -> None:
        self.noted = True

    def __enter__(self) -> HangUps:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        self._previous = {s: signal.signal(s, self._note) for s in (signal.SIGHUP, signal.SIGTERM)}
        self._previous_fd = signal.set_wakeup_fd(self._write)  # wakes relay()'s select
        return self

    def __exit__(self, *_exc: object) -> None:
        signal.set_wakeup_fd(self._previous_fd)
        for signo, handler in self._previous.items():
            signal.signal(signo, handler)
        os.close(self.fd)
        os.close(self._write)


def relay(sock: socket.socket, keys_fd: int = 0, screen_fd: int = 1, hang_ups: HangUps | None = None) -> str:
    """Relay both ways until the detach key, the end of the keys (EOF), a
    hang-up or the session's end; say which."""
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "session")
    selector.register(keys_fd, selectors.EVENT_READ, "keys")
    if hang_ups is not None:
        selector.register(hang_ups.fd, selectors.EVENT_READ, "signal")
    try:
        while not (hang_ups is not None and hang_ups.noted):
            for key, _ in selector.select():
                if key.data == "signal":
                    os.read(key.fd, 256)  # hang_ups.fd: the wake-up byte
                elif key.data == "session":
                    shown = sock.recv(65536)
                    if not shown:
                        return ENDED
                    _write_all(screen_fd, shown)
                else:
                    typed = os.read(keys_fd, 4096)
                    before, detach, _after = typed.partition(DETACH)
                    if before:
                        sock.sendall(before)
                    if detach or not typed:
                        return DETACHED
        return HUNG_UP
    except (BrokenPipeError, ConnectionResetError):
        return ENDED
    except OSError:  # the local terminal went away under us (EIO)
        return HUNG_UP
    finally:
        selector.close()


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
