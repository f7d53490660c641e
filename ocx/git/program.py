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
import shlex
import shutil
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
        process = subprocess.Popen(command, cwd=str(cwd) if cwd is not None else str(home),
                                   env=git_environment(home, env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise GitError(command[1:], -1, "", str(exc)) from exc
    with process:
        try:
            out, err = process.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            # The whole session: git's helpers (git-remote-http) hold its pipes and would outlive it.
            from ..fossil.program import end_session  # here: the fast-import filter's start imports this module

            end_session(process)
            raise GitError(command[1:], -1, "", f"timed out after {timeout:g} s") from exc
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    if check and process.returncode != 0:
        raise GitError(command[1:], process.returncode, stdout, stderr)
    return GitResult(process.returncode, stdout, stderr)


def git_available() -> bool:
    """Whether the `git` program is on this host's PATH (the node needs it only to serve D49)."""
    return any(os.access(Path(d) / GIT, os.X_OK) for d in _PATH.split(":"))


def _real_git() -> str:
    """The system's git, from the host's system directories alone (never a PATH a caller gave)."""
    found = shutil.which(GIT, path=_PATH)
    if found is None:
        raise GitError([], -1, "", "git is not installed")
    return found


def git_in_front(fast_import: str) -> str:
    """The text of a `git` for the head of the PATH `fossil git export` runs with: `git fast-import`
    runs FAST_IMPORT (a shell command line, given the same arguments; git/fast_import_filter.py),
    every other command the real git, at once (Fossil runs one for each tag and branch)."""
    return ("#!/bin/sh\n"
            f'if [ "$1" = fast-import ]; then exec {fast_import} "$@"; fi\n'
            f'exec {shlex.quote(_real_git())} "$@"\n')


def start_git(args: Sequence[str]) -> subprocess.Popen[bytes]:
    """The real `git ARGS...` started with a pipe for its standard input, its output and working
    directory this process's (git/fast_import_filter.py: `git fast-import` behind the filter)."""
    env = {**os.environ, "PATH": _PATH, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.Popen([_real_git(), *args], env=env, stdin=subprocess.PIPE)
