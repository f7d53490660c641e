"""The only place that starts the `git` program (architecture: one place per
external program).

Every run gets a minimal, explicit environment: HOME (a directory the caller
names, so no user's ~/.gitconfig is read), PATH (the host's system
directories), LANG, and GIT_CONFIG_NOSYSTEM so that /etc/gitconfig is not read
either; nothing is inherited from whoever started us. A secret (a forge's
credentials, D50) never goes in argv or the environment (D41): the caller
names a root-only file for git's own credential helper to read.
"""
from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..protocol.errors import OcxError

GIT = "git"
_PATH = "/usr/local/bin:/usr/bin:/bin"


class GitError(OcxError, RuntimeError):
    """`git` failed, or could not be started (returncode -1)."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args_run = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {returncode}"
        super().__init__(f"git {' '.join(self.args_run[:2])}: {last}")


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str


def git_environment(home: Path | str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment a `git` run gets (module doc)."""
    env = {"HOME": str(home), "PATH": _PATH, "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0"}
    env.update(extra or {})
    return env


def run_git(
    args: Sequence[str],
    *,
    home: Path | str,
    cwd: Path | str | None = None,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float = 120.0,
) -> GitResult:
    """Run `git ARGS...` and return its output as text; raise GitError on failure."""
    Path(home).mkdir(parents=True, exist_ok=True)
    command = [GIT, *map(str, args)]
    data = input.encode() if isinstance(input, str) else (input or b"")
    try:
        done = subprocess.run(command, cwd=str(cwd) if cwd is not None else str(home),
                              env=git_environment(home, env), input=data, capture_output=True,
                              timeout=timeout, start_new_session=True, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(command[1:], -1, "", str(exc)) from exc
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    if check and done.returncode != 0:
        raise GitError(command[1:], done.returncode, stdout, stderr)
    return GitResult(done.returncode, stdout, stderr)


def git_available() -> bool:
    """Whether the `git` program is on this host's PATH (the node needs it only to serve D49)."""
    return any(os.access(Path(d) / GIT, os.X_OK) for d in _PATH.split(":"))
