"""The feeder's one way to start the program: a fork and an exec, by hand (D13).

Not subprocess: its imports (locale, threading, warnings, and signal's enums through it) were
a third of the feeder's start, paid by every run (docs/node.md). This does what the feeder
asked of Popen and no more: the three standard streams, a session of its own whose
controlling terminal is its standard input (a session's terminal, D32), every other descriptor
closed, exactly the environment given, the working directory, the program looked up on that
environment's PATH as Popen does, and SIGPIPE and SIGXFSZ, which Python ignores, back to their
default as Popen's restore_signals puts them. An exec, chdir or ioctl that fails in the child
raises its OSError here, in the feeder, as Popen does.

Standard library only, as the feeder: it runs as the run's user, inside its unit.
"""
from __future__ import annotations

import errno
import fcntl
import os
import termios

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:  # the same functions and numbers, typed
    from signal import SIG_DFL, SIGKILL, SIGPIPE, SIGSTOP, SIGTERM, SIGXFSZ
    from signal import signal as set_handler
else:  # the C module: signal.py wraps it in enums it builds at import, for the feeder too (feeder.py)
    from _signal import SIG_DFL, SIGKILL, SIGPIPE, SIGSTOP, SIGTERM, SIGXFSZ
    from _signal import signal as set_handler

__all__ = ["SIG_DFL", "SIGKILL", "SIGSTOP", "SIGTERM", "Started", "set_handler", "spawn"]


class Started:
    """The program, started: its pid, and its end as Popen.wait gives it (-N: ended by signal N)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> int:
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def executables(program: str, env: dict[str, str]) -> list[str]:
    """Where PROGRAM may be: itself when it names a directory, else each of ENV's PATH (Popen's rule)."""
    if os.path.dirname(program):
        return [program]
    return [os.path.join(directory, program) for directory in os.get_exec_path(env)]


def spawn(argv: list[str], env: dict[str, str], streams: tuple[int, int, int], cwd: str | None = None,
          terminal: bool = False) -> Started:
    """ARGV started with STREAMS as its descriptors 0, 1 and 2 (each its own number already or above 2);
    with TERMINAL, in a session of its own whose controlling terminal is its standard input."""
    candidates = executables(argv[0], env)
    failed_read, failed_write = os.pipe()  # close-on-exec both: an exec that works closes the child's end
    pid = os.fork()
    if pid == 0:  # the child: it execs or exits, never returns into the feeder
        try:
            os.close(failed_read)
            _become(argv, env, streams, cwd, terminal, candidates, failed_write)
        except OSError as error:
            os.write(failed_write, str(error.errno or errno.EINVAL).encode())
        except ValueError:  # a null byte in an argument or a variable, which Popen refused before its fork
            os.write(failed_write, str(errno.EINVAL).encode())
        finally:
            os._exit(255)
    os.close(failed_write)
    with os.fdopen(failed_read, "rb") as failed:
        number = failed.read()
    if number:
        os.waitpid(pid, 0)
        raise OSError(int(number), os.strerror(int(number)), argv[0])
    return Started(pid)


def _become(argv: list[str], env: dict[str, str], streams: tuple[int, int, int], cwd: str | None, terminal: bool,
            candidates: list[str], keep: int) -> None:
    """In the child, in Popen's order: streams, directory, signals, session and terminal, descriptors, exec."""
    for target, fd in enumerate(streams):
        if fd == target:
            os.set_inheritable(fd, True)
        else:
            os.dup2(fd, target)  # inheritable
    if cwd is not None:
        os.chdir(cwd)
    set_handler(SIGPIPE, SIG_DFL)
    set_handler(SIGXFSZ, SIG_DFL)
    if terminal:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    first = 0  # as Popen: the first error that is not "not there" is the one told
    for path in candidates:
        try:
            os.execve(path, argv, env)
        except OSError as error:
            if error.errno not in (errno.ENOENT, errno.ENOTDIR) and not first:
                first = error.errno or errno.EINVAL
    raise OSError(first or errno.ENOENT, "")
