"""Forge mirrors (D50): the node pushes its git mirror (D49) to each git
remote its configuration names (`git_forges`), after each update.

The credentials are git's own: a file in git-credential-store's format
(`https://LOGIN:TOKEN@HOST` per line), root's alone, that git's `store`
helper reads itself. Its path is in git's arguments; the secret never is,
nor in git's environment, nor in what this module reports, which the
caller logs (D41). A file that is a link, not root's (this process's), or
readable by anyone else is refused, and nothing is pushed.

A push never raises into the caller's record work: each remote gets a
ForgeResult, ok or not, with git's last words; a failed one is tried again
at the next update, since each push sends the whole mirror. Each is
bounded: git's own timeout for a stalled transfer, and program.py's for
the whole push.

What is pushed: every branch and tag, and `refs/notes/ocx` (the verdicts,
D49) when the mirror has it, forced (the node's mirror is the truth of
what Fossil holds); nothing on the forge is deleted (no `--prune`: a forge
may hold its own refs, or refuse to delete its default branch).
"""
from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..protocol.errors import OcxError
from .program import run_git

NOTES_REF = "refs/notes/ocx"
PUSH_SECONDS = 300.0  # one remote's whole push: the next update tries again
STALL_SECONDS = 30  # git's http.lowSpeedTime: a transfer slower than 1 byte/s that long is cut
REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


@dataclass(frozen=True)
class ForgeResult:
    url: str
    ok: bool
    detail: str  # git's last line, or why nothing was tried; never a secret


def credentials_problem(path: Path) -> str | None:
    """Why PATH may not hold the forges' credentials, or None: not a link, a plain file of this
    process's user, read and written by that user alone."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None  # no credentials: forges that need none still get their push
    except OSError as error:
        return f"{path}: {error.strerror}"
    if not stat.S_ISREG(found.st_mode):
        return f"{path}: not a plain file"
    if found.st_uid != os.geteuid() or found.st_mode & 0o077:
        return f"{path}: must be {os.geteuid()}'s alone (mode 0600), not mode {found.st_mode & 0o777:o}"
    return None


def _options(credentials_file: Path) -> list[str]:
    """git's -c options: the store helper alone reads the credentials (the empty value first drops
    any helper configured before), a stalled transfer is cut, and no hook or fsmonitor program in the
    mirror runs as root (D41; git itself refuses a mirror that is not root's: safe.directory is never set)."""
    return ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", "credential.helper=", "-c", f"credential.helper=store --file={credentials_file}",
            "-c", "http.lowSpeedLimit=1", "-c", f"http.lowSpeedTime={STALL_SECONDS}",
            "-c", "core.askPass=", "-c", "credential.interactive=false"]


def push_mirror(mirror: Path, forges: Sequence[str], credentials_file: Path, *, home: Path,
                timeout: float = PUSH_SECONDS) -> list[ForgeResult]:
    """Push MIRROR's branches, tags and notes to each of FORGES (module doc). Never raises for a
    forge that fails or a bad credentials file: each gets its ForgeResult."""
    problem = credentials_problem(credentials_file)
    if problem is not None:
        return [ForgeResult(url, False, f"nothing pushed: {problem}") for url in forges]
    results = []
    for url in forges:
        try:
            has_notes = run_git(["rev-parse", "--verify", "--quiet", NOTES_REF], home=home, cwd=mirror,
                                check=False, timeout=timeout).returncode == 0
            refspecs = [*REFSPECS, *([f"+{NOTES_REF}:{NOTES_REF}"] if has_notes else [])]
            done = run_git([*_options(credentials_file), "push", "--porcelain", "--", url, *refspecs],
                           home=home, cwd=mirror, check=False, timeout=timeout)
        except OcxError as error:  # git did not start or did not finish in time
            results.append(ForgeResult(url, False, str(error)))
            continue
        words = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
        results.append(ForgeResult(url, done.returncode == 0, words[-1][:500]))
    return results


class ForgePusher:
    """push_mirror off the caller's thread (D50: a forge never holds back a record): `push_soon()`
    returns at once; one worker thread pushes, one push at a time, and asks made while a push runs
    become one more push after it (the mirror then holds everything they asked about). REPORT is
    told each push's results, on the worker's thread; it must not raise."""

    def __init__(self, mirror: Path, forges: Sequence[str], credentials_file: Path, *, home: Path,
                 report: Callable[[list[ForgeResult]], None], timeout: float = PUSH_SECONDS) -> None:
        self._push = partial(push_mirror, mirror, tuple(forges), credentials_file, home=home, timeout=timeout)
        self._report = report
        self._asked = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def push_soon(self) -> None:
        self._asked.set()
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="ocx-forge-push", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._asked.is_set():
                    self._worker = None  # a push_soon() from now on starts a new worker
                    return
                self._asked.clear()
            self._report(self._push())

    def wait(self, timeout: float) -> bool:
        """Whether the pushes asked for so far ended within TIMEOUT (a service stopping waits on this)."""
        with self._lock:
            worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return worker is None or not worker.is_alive()
