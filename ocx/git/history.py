"""What `ocx git import` reads of a git repository (D50): a branch's commits,
newest first, and each commit's tree. The parsers are pure (tested with
hypothesis); the reads run `git` through program.py only.

Everything here may come from other people (the mirror holds every sender's
messages and file names): a record that does not parse as git writes it is
refused whole, never guessed at.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..protocol.errors import OcxError
from .program import run_git

# `fossil git export` (2.21, export.c) ends each commit's message with this trailer naming the check-in.
ORIGIN_TRAILER = "FossilOrigin-Name"
_ORIGIN_LINE = re.compile(rf"^{ORIGIN_TRAILER}: ([0-9a-f]{{64}}|[0-9a-f]{{40}})$", re.ASCII)
_OBJECT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}", re.ASCII)
_SECONDS = re.compile(r"-?[0-9]{1,12}", re.ASCII)
# %H, %P, %at, %B: one field each, NUL-separated, and `-z` puts a NUL between commits.
LOG_FORMAT = "%H%x00%P%x00%at%x00%B"
FILE_MODES = {"100644": False, "100755": True}  # a file's git mode: executable or not
BATCH = 200  # commits read per `git log`, newest first, until the walk finds Fossil's


class HistoryError(OcxError, ValueError):
    """What git printed is not what this module asked for, or a commit or tree
    holds what a Fossil check-in cannot (named)."""


@dataclass(frozen=True)
class Commit:
    hash: str
    parents: tuple[str, ...]
    author_time: int  # seconds since 1970, UTC (%at)
    message: str

    @property
    def origin(self) -> str | None:
        """The Fossil check-in `fossil git export` made this commit from, when its message says so."""
        return fossil_origin(self.message)

    @property
    def title(self) -> str:
        return self.message.strip().split("\n", 1)[0] if self.message.strip() else ""


@dataclass(frozen=True)
class TreeFile:
    path: str
    blob: str  # the git blob's hash
    executable: bool


def fossil_origin(message: str) -> str | None:
    """The check-in hash in MESSAGE's last paragraph's `FossilOrigin-Name:` line, if one."""
    paragraphs = message.rstrip("\n").split("\n\n")
    for line in reversed(paragraphs[-1].split("\n")):
        found = _ORIGIN_LINE.match(line)
        if found:
            return found.group(1)
    return None


def parse_log(text: str) -> list[Commit]:
    """Commits from `git log -z --format=LOG_FORMAT`'s output."""
    if not text:
        return []
    fields = text[:-1].split("\0") if text.endswith("\0") else text.split("\0")
    if len(fields) % 4:
        raise HistoryError(f"git log: {len(fields)} fields, not four per commit")
    commits = []
    for at in range(0, len(fields), 4):
        hash_, parents, seconds, message = fields[at:at + 4]
        listed = tuple(parents.split(" ")) if parents else ()
        if not _OBJECT.fullmatch(hash_) or not all(_OBJECT.fullmatch(p) for p in listed) \
                or not _SECONDS.fullmatch(seconds):
            raise HistoryError(f"git log: a commit's fields do not parse: {hash_[:64]!r}")
        commits.append(Commit(hash_, listed, int(seconds), message))
    return commits


def unsafe_path(path: str) -> bool:
    """Whether PATH could leave a checkout or touch git's or Fossil's own files there: an empty, `.` or
    `..` part, `.git` anywhere, Fossil's checkout database at the top, a control character."""
    parts = path.split("/")
    return (any(part in ("", ".", "..") or part.lower() == ".git" for part in parts)
            or parts[0] in (".fslckout", "_FOSSIL_") or any(ord(c) < 32 or ord(c) == 127 for c in path))


def parse_tree(text: str) -> list[TreeFile]:
    """Files from `git ls-tree -r -z --full-tree`'s output; anything but a plain or executable
    file (a symbolic link, a submodule) is refused naming its path: Fossil's check-ins hold files."""
    files = []
    for entry in text.split("\0"):
        if not entry:
            continue
        head, tab, path = entry.partition("\t")
        parts = head.split(" ")
        if not tab or len(parts) != 3 or not path or not _OBJECT.fullmatch(parts[2]):
            raise HistoryError(f"git ls-tree: an entry does not parse: {entry[:200]!r}")
        mode, kind, blob = parts
        if unsafe_path(path):
            raise HistoryError(f"{path!r}: not a name a checkout may hold")
        if kind != "blob" or mode not in FILE_MODES:
            raise HistoryError(f"{path!r}: a {kind} of mode {mode}; only files and executables become check-ins")
        files.append(TreeFile(path, blob, FILE_MODES[mode]))
    return files


@dataclass(frozen=True)
class GitRepository:
    """A git repository on this machine (a clone of the node's mirror), read through program.py."""

    directory: Path
    home: Path  # git's HOME: no one's ~/.gitconfig is read (program.py)

    def git(self, *args: str, extra: dict[str, str] | None = None) -> str:
        return run_git(list(args), home=self.home, cwd=self.directory, env=extra).stdout

    def branch_tip(self, branch: str) -> str:
        """The commit local BRANCH names: HistoryError, naming it, when there is none."""
        done = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"refs/heads/{branch}^{{commit}}"],
                       home=self.home, cwd=self.directory, check=False)
        tip = done.stdout.strip()
        if done.returncode != 0 or not _OBJECT.fullmatch(tip):
            raise HistoryError(f"branch {branch!r}: no such branch in {self.directory}")
        return tip

    def newest_first(self, tip: str) -> Iterator[Commit]:
        """TIP and its first parents, newest first, read BATCH at a time."""
        skip = 0
        while True:
            batch = parse_log(self.git("log", "-z", "--first-parent", f"--format={LOG_FORMAT}",
                                       f"--max-count={BATCH}", f"--skip={skip}", tip, "--"))
            yield from batch
            if len(batch) < BATCH:
                return
            skip += BATCH

    def tree(self, commit: str) -> list[TreeFile]:
        return parse_tree(self.git("ls-tree", "-r", "-z", "--full-tree", commit))

    def write_tree(self, commit: str, directory: Path, index: Path) -> None:
        """COMMIT's files written into DIRECTORY by git itself (its own checks of every path), through
        a private INDEX file; files there that COMMIT lacks are left for the caller."""
        extra = {"GIT_INDEX_FILE": str(index)}
        self.git(f"--work-tree={directory}", "read-tree", commit, extra=extra)
        self.git(f"--work-tree={directory}", "checkout-index", "--all", "--force", extra=extra)
