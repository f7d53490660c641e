"""The only place that starts the `fossil` program (architecture: one place
per external program).

Every run gets a minimal, explicit environment: HOME (a writable directory the
caller names, where Fossil keeps its `.fossil` global config), PATH (the host's
system directories) and LANG, and nothing inherited from whoever started us
(D15 spirit: a run of `fossil` must not depend on the caller's shell).
Each run starts in a new session with no controlling terminal, so a password
Fossil would prompt for (`fossil user password LOGIN`) is read from standard
input instead of /dev/tty: it never has to appear in argv.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FOSSIL = "fossil"


class FossilError(RuntimeError):
    """`fossil` exited non-zero (or could not start): says what and why."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str):
        self.args_run = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        shown = " ".join(self.args_run[:3])
        why = (stderr or stdout).strip() or "no output"
        super().__init__(f"fossil {shown} ... exited {returncode}: {why}")


@dataclass(frozen=True)
class FossilResult:
    returncode: int
    stdout: str
    stderr: str


def fossil_environment(home: Path | str, user: str | None = None) -> dict[str, str]:
    """The whole environment of a `fossil` run: nothing inherited (D15)."""
    env = {"HOME": str(home), "PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
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
) -> FossilResult:
    """Run `fossil ARGS...` and return its output; raise FossilError on failure."""
    Path(home).mkdir(parents=True, exist_ok=True)
    command = [FOSSIL, *map(str, args)]
    try:
        done = subprocess.run(
            command,
            cwd=str(cwd) if cwd is not None else str(home),
            env=fossil_environment(home, user),
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            start_new_session=True,  # no tty: prompts read stdin (module doc)
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FossilError(command[1:], -1, "", str(exc)) from exc
    if check and done.returncode != 0:
        raise FossilError(command[1:], done.returncode, done.stdout, done.stderr)
    return FossilResult(done.returncode, done.stdout, done.stderr)


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class FossilServer:
    """A running `fossil server` on 127.0.0.1."""

    process: subprocess.Popen
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


def serve(
    repository: Path | str,
    *,
    home: Path | str,
    port: int | None = None,
    jail: bool = False,
    extra_args: Sequence[str] = (),
    startup_timeout: float = 10.0,
) -> FossilServer:
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
            process = subprocess.Popen(
                command,
                cwd=str(home),
                env=fossil_environment(home),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if _wait_until_listening(process, chosen, startup_timeout):
            return FossilServer(process, chosen, repository)
        if process.poll() is None:
            process.kill()
        process.wait()
    said = log.read_text(errors="replace")
    raise FossilError(command[1:], process.returncode or -1, "", said or "server did not start")


def _wait_until_listening(process: subprocess.Popen, port: int, timeout: float) -> bool:
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
