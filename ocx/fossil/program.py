"""The only place that starts the `fossil` program (architecture: one place
per external program).

Every run gets a minimal, explicit environment: HOME (a writable directory the
caller names, where Fossil keeps its `.fossil` global config), PATH (the host's
system directories) and LANG, and nothing inherited from whoever started us
(D15 spirit: a run of `fossil` must not depend on the caller's shell).
Each run starts in a new session with no controlling terminal, so a password
Fossil would prompt for (`fossil user password LOGIN`) is read from standard
input instead of /dev/tty: it never has to appear in argv.

A password for a sync (`clone`, `push`, `pull` with a URL naming a login)
never appears in argv or the environment either (D41): every process on the
host can read another's command line in /proc. Fossil 2.21 asks for it only
when its standard input is a terminal, so `run_fossil_with_password` gives
it a pseudo-terminal this process alone holds, waits for Fossil's own prompt
and types the password there.

A process may ask that every `fossil` it starts be confined first
(`confine_children`): the node's service moves each child into a scope of
its own with a `MemoryMax` (ocx/systemd/scopes.py), since what a child pulls
or checks out was sent by runs (D41). The child is then started as
`/bin/sh -c HOLD fossil ARGS`: the shell stops itself (SIGSTOP, which no
one but root or its own user may undo) and execs `fossil` (same pid) only
once it was confined and continued, so nothing of its work is ever charged
to the service; refused, it is killed stopped, and no `fossil` ran.
"""
from __future__ import annotations

import errno
import os
import pty
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple  # not dataclasses: inspect and ast, a fifth of a preparation's start

from ..protocol.errors import OcxError
from .errors import FossilLayerError
from .fossil_failure import Cause, FossilError

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FOSSIL = "fossil"


# A start that failed names its errno: these are the ones of a server or a
# file not there for it now (the same as fossil_failure.py's words read in their texts).
_ERRNO_CAUSES = {errno.ECONNREFUSED: Cause.UNREACHABLE, errno.ECONNRESET: Cause.UNREACHABLE,
                 errno.EPIPE: Cause.UNREACHABLE, errno.EBUSY: Cause.BUSY, errno.ETXTBSY: Cause.BUSY,
                 errno.ETIMEDOUT: Cause.TIMED_OUT, errno.ENOSPC: Cause.FULL}


def not_started(error: OSError | subprocess.TimeoutExpired) -> Cause:
    """Why `fossil` did not start or finish, from the error's type and errno."""
    if isinstance(error, subprocess.TimeoutExpired):
        return Cause.TIMED_OUT
    return _ERRNO_CAUSES.get(error.errno or 0, Cause.OTHER)


class FossilResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


# What a confined child runs first: stop until continued, then become `fossil` (same pid).
_HOLD = 'kill -STOP $$ && exec "$0" "$@"'
_confine: Callable[[int, str], None] | None = None


def confine_children(confine: Callable[[int, str], None] | None) -> None:
    """Every `fossil` this process starts from now on is given to CONFINE (its pid, its subcommand) before it runs
    (module doc); CONFINE raises to refuse, and the child is killed unrun. None: started as is."""
    global _confine
    _confine = confine


def _start(command: list[str], **options: Any) -> subprocess.Popen[Any]:
    """`fossil` started, confined first when this process asked for it (module doc)."""
    confine = _confine
    if confine is None:
        return subprocess.Popen(command, **options)
    process = subprocess.Popen(["/bin/sh", "-c", _HOLD, *command], **options)
    try:
        # Until it stopped itself (or ended); WNOWAIT leaves its end for Popen to collect.
        held = os.waitid(os.P_PID, process.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
        if held is None or held.si_code != os.CLD_STOPPED:
            raise FossilError(command[1:], -1, "", "the shell that holds `fossil` ended before it stopped")
        confine(process.pid, command[1] if len(command) > 1 else "")
        os.kill(process.pid, signal.SIGCONT)
    except (OcxError, OSError) as error:  # the bus's or systemd's refusal (its layer's error): `fossil` never ran
        process.kill()
        process.wait()
        if isinstance(error, FossilError):
            raise
        raise FossilError(command[1:], -1, "", f"not confined: {error}") from error
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def fossil_environment(home: Path | str, user: str | None = None, path_first: Path | None = None) -> dict[str, str]:
    """The whole environment of a `fossil` run: nothing inherited (D15). PATH_FIRST: a directory
    of root's searched before the system's (the export's `git`, git/fast_import_filter.py)."""
    path = SYSTEM_PATH if path_first is None else f"{path_first}:{SYSTEM_PATH}"
    env = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"}
    if user is not None:
        # Fossil names the CLI's user from USER when nothing else does.
        env["USER"] = user
    return env


def run_fossil(
    args: Sequence[str],
    *,
    home: Path | str,
    cwd: Path | str | None = None,
    input: str | None = None,
    check: bool = True,
    user: str | None = None,
    timeout: float = 120.0,
    path_first: Path | None = None,
) -> FossilResult:
    """Run `fossil ARGS...` and return its output; raise FossilError on failure."""
    Path(home).mkdir(parents=True, exist_ok=True)
    command = [FOSSIL, *map(str, args)]
    try:
        process: subprocess.Popen[str] = _start(
            command, cwd=str(cwd) if cwd is not None else str(home), env=fossil_environment(home, user, path_first),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
            start_new_session=True)  # no tty: prompts read stdin (module doc)
    except FossilLayerError as exc:  # the confinement refused: nothing ran
        raise FossilError(command[1:], -1, "", str(exc)) from exc
    except OSError as exc:
        raise FossilError(command[1:], -1, "", str(exc), cause=not_started(exc)) from exc
    with process:
        try:
            stdout, stderr = process.communicate(input if input is not None else "", timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            end_session(process)
            raise FossilError(command[1:], -1, "", str(exc), cause=not_started(exc)) from exc
    if check and process.returncode != 0:
        raise FossilError(command[1:], process.returncode, stdout, stderr)
    return FossilResult(process.returncode, stdout, stderr)


# After a timed-out program's session was killed, how long its pipes are read to their end.
AFTER_KILL_SECONDS = 5.0


def end_session(process: subprocess.Popen[Any], seconds: float = AFTER_KILL_SECONDS) -> None:
    """Kill PROCESS's whole session (started with start_new_session: the program and what it started, as
    `fossil git export`'s git or git's own helpers) and collect its end. Its pipes are read to their end
    for at most SECONDS: a process that left the session (setsid) and still holds them would otherwise
    keep the caller, a service of root's, waiting on it for as long as it liked (D41). Shared with
    ocx/git/program.py."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # already ended and collected
        pass
    try:
        process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait()  # the program itself was killed with its session: its end comes at once


# Fossil 2.21's prompts (url.c): the password on standard error, the question
# whether to keep it on standard output. Seen the same in 2.27's source.
PASSWORD_PROMPT = b"password for "
REMEMBER_PROMPT = b"remember password (Y/n)? "


def run_fossil_with_password(
    args: Sequence[str],
    password: str,
    *,
    home: Path | str,
    remember: bool = False,
    cwd: Path | str | None = None,
    user: str | None = None,
    timeout: float = 120.0,
) -> FossilResult:
    """Run `fossil ARGS...` whose URL names a login and no password, and
    answer Fossil's prompt for it on a terminal only this process holds (D41:
    never in argv or the environment). REMEMBER answers Fossil's question
    whether the repository keeps it (obscured, `last-sync-pw`). Fails if
    Fossil asks twice (the server refused it) or does not finish in TIMEOUT."""
    Path(home).mkdir(parents=True, exist_ok=True)
    command = [FOSSIL, *map(str, args)]
    master, slave = pty.openpty()
    try:
        process: subprocess.Popen[bytes] = _start(
            command, cwd=str(cwd) if cwd is not None else str(home), env=fossil_environment(home, user),
            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except (OSError, FossilLayerError) as exc:  # FossilLayerError: the confinement refused, nothing ran
        os.close(master)
        raise FossilError(command[1:], -1, "", str(exc),
                          cause=not_started(exc) if isinstance(exc, OSError) else None) from exc
    finally:
        os.close(slave)
    try:
        stdout, stderr, asked = _answer_prompts(process, master, password, remember, timeout)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in _pipes(process):
            pipe.close()
    out, err = stdout.decode(errors="replace"), stderr.decode(errors="replace")
    if process.returncode != 0 or asked != 1:
        why = err if asked == 1 else f"{err} (Fossil asked for the password {asked} times)"
        raise FossilError(command[1:], process.returncode if process.returncode is not None else -1, out, why)
    return FossilResult(process.returncode, out, err)


def _pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    """The child's standard output and error: pipes, as every start here asks."""
    if process.stdout is None or process.stderr is None:
        raise ValueError("fossil started without pipes")
    return process.stdout, process.stderr


def _answer_prompts(process: subprocess.Popen[bytes], master: int, password: str, remember: bool,
                    timeout: float) -> tuple[bytes, bytes, int]:
    """Read Fossil's output until it exits, typing the password at its prompt (once)."""
    deadline = time.monotonic() + timeout
    out_fd, err_fd = (pipe.fileno() for pipe in _pipes(process))
    streams = {out_fd: bytearray(), err_fd: bytearray()}
    asked = answered_remember = 0
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(master, selectors.EVENT_READ)  # the terminal's echo, drained and dropped
        open_streams = set(streams)
        while open_streams:
            left = deadline - time.monotonic()
            if left <= 0:
                process.kill()
                break
            for key, _ in selector.select(min(left, 1.0)):
                try:
                    chunk = os.read(key.fd, 65536)
                except OSError:  # the terminal's other side closed (EIO)
                    chunk = b""
                if not chunk:
                    selector.unregister(key.fd)
                    open_streams.discard(key.fd)
                    continue
                if key.fd == master:
                    continue
                streams[key.fd] += chunk
            err, out = bytes(streams[err_fd]), bytes(streams[out_fd])
            if err.count(PASSWORD_PROMPT) > asked:
                asked += 1
                if asked > 1:  # the server refused it: never loop on a wrong password
                    process.kill()
                    break
                os.write(master, password.encode() + b"\n")
            if out.count(REMEMBER_PROMPT) > answered_remember:
                answered_remember += 1
                os.write(master, b"y\n" if remember else b"n\n")
    return bytes(streams[out_fd]), bytes(streams[err_fd]), asked


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now (the kernel's pick for port 0)."""
    import socket  # here: a run's preparation, which imports this module, opens none

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FossilServer(NamedTuple):
    """A running `fossil server` on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int
    repository: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


def serve(repository: Path | str, *, home: Path | str, port: int | None = None, jail: bool = False,
          extra_args: Sequence[str] = (), startup_timeout: float = 10.0) -> FossilServer:
    """Start `fossil server` for REPOSITORY on 127.0.0.1 and wait until it answers.

    `jail=False` passes --nojail: run as root, a jailed server chroots into the
    repository's directory, where its backoffice finds no /bin/sh and hooks
    silently never run (fossil-facts.md). Unjailed, Fossil drops to the
    repository file's owner: chown the file to choose whom it runs as.
    With no `port`, a free one is picked, and picked again if taken meanwhile.
    """
    repository = Path(repository).resolve()
    Path(home).mkdir(parents=True, exist_ok=True)
    for _attempt in range(5 if port is None else 1):
        chosen = port if port is not None else free_port()
        command = [FOSSIL, "server", "--localhost", "--port", str(chosen)]
        if not jail:
            command.append("--nojail")
        command += [*extra_args, str(repository)]
        # A file, not a pipe: a pipe nobody reads could block the server.
        log = Path(home) / f"fossil-server-{chosen}.log"
        with open(log, "wb") as log_file:
            process = subprocess.Popen(command, cwd=str(home), env=fossil_environment(home), stdin=subprocess.DEVNULL,
                                       stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        if _wait_until_listening(process, chosen, startup_timeout):
            return FossilServer(process, chosen, repository)
        if process.poll() is None:
            process.kill()
        process.wait()
    said = log.read_text(errors="replace")
    raise FossilError(command[1:], process.returncode or -1, "", said or "server did not start")


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    import socket  # as free_port

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False
