"""A check-in's files, read from the repository and written as plain files (D45).

A release is built from a check-in's tree, and the tree is whatever its sender committed: its
names and contents are hostile bytes (D41). So a name is taken only as a relative path of
ordinary parts, a file is written as a regular file (a committed link's target becomes its
content), and the whole is bounded in count and size. Nothing here runs or imports what it
writes; the build's unprivileged unit does (release_build/build.py, D48).
"""
from __future__ import annotations

import os
import sqlite3
import stat

from .errors import RepositoryError
from .manifest import unescape
from .repository import Repository

MAX_FILES = 20_000
MAX_BYTES = 256 << 20
_NAME_MAX = 1024


class CheckinTreeError(RepositoryError):
    """A check-in whose tree cannot be written as it is: the message names the file or the bound."""


class NotASourceRepository(RepositoryError):
    """A path a node's configuration names as its release source that cannot be read as one (D45)."""


def source_repository(path: str) -> Repository:
    """The repository of OCX's source at PATH, opened to read (D45): refused unless it is an absolute path
    to a regular file (no link followed) that only its owner may change, in a directory only its owner
    may change, holding a Fossil repository. Whoever writes the file writes its senders (rcvfrom), so
    could pass D25's gate: it must be as much its owner's alone as the served repository is its server's."""
    if not os.path.isabs(path):
        raise NotASourceRepository(f"release_source: {path!r} is not an absolute path")
    for checked, what in ((os.path.dirname(path), "its directory"), (path, "the file")):
        try:
            found = os.lstat(checked)
        except OSError as error:
            raise NotASourceRepository(f"release_source: {path}: {error.strerror}") from None
        if checked == path and not stat.S_ISREG(found.st_mode):
            raise NotASourceRepository(f"release_source: {path} is not a regular file (a link is not followed)")
        if found.st_mode & 0o022:
            raise NotASourceRepository(f"release_source: {path}: {what} may be changed by others than its owner")
    repository = Repository(path)
    try:
        project = repository.project_code
        repository.max_rcvid()  # Fossil's own tables, not only a `config` table of the same name
    except sqlite3.Error as error:
        repository.close()
        raise NotASourceRepository(f"release_source: {path} is not a Fossil repository ({error})") from None
    if not project:
        repository.close()
        raise NotASourceRepository(f"release_source: {path} is not a Fossil repository (no project-code)")
    return repository


def checkin_files(repository: Repository, checkin: str) -> dict[str, tuple[str, str]]:
    """The check-in's files: name -> (content's hash, permission: "", "x" or "l"), its baseline's
    (a delta manifest's B card) taken first and its own F cards over them."""
    artifact = repository.parsed(checkin)
    files: dict[str, tuple[str, str]] = {}
    baseline = artifact.first("B")
    if baseline is not None and baseline.args:
        for card in repository.parsed(baseline.args[0]).all("F"):
            if len(card.args) >= 2:
                files[unescape(card.args[0])] = (card.args[1], card.args[2] if len(card.args) > 2 else "")
    for card in artifact.all("F"):
        if not card.args:
            continue
        name = unescape(card.args[0])
        if len(card.args) < 2:
            files.pop(name, None)  # removed since the baseline
        else:
            files[name] = (card.args[1], card.args[2] if len(card.args) > 2 else "")
    return files


def _parts(name: str) -> list[str]:
    parts = name.split("/")
    if len(name) > _NAME_MAX or "\0" in name or any(part in ("", ".", "..") for part in parts):
        raise CheckinTreeError(f"file: {name[:120]!r} is not a plain relative name")
    return parts


def write_checkin_tree(repository: Repository, checkin: str, target: str) -> int:
    """Write the check-in's files under TARGET (made here, must not exist); the count written."""
    files = checkin_files(repository, checkin)
    if len(files) > MAX_FILES:
        raise CheckinTreeError(f"files: more than {MAX_FILES}")
    os.mkdir(target, 0o755)
    total = 0
    for name, (hash_, permission) in sorted(files.items()):
        parts = _parts(name)
        directory = target
        for part in parts[:-1]:
            directory = os.path.join(directory, part)
            if not os.path.isdir(directory):
                os.mkdir(directory, 0o755)  # root's fresh tree: nothing else writes here
        data = repository.artifact(hash_, limit=MAX_BYTES - total)
        total += len(data)
        path = os.path.join(directory, parts[-1])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o755 if permission == "x" else 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    return len(files)
