"""The one way root's code touches what a run can write (D41).

A run's home (RunHome.on_host and all below it: its clone, its checkout,
its copies of the runner's homes, its last line), and anything a check-in
it was given put there, is the run's to shape: a name may be a link to a
secret, a FIFO that blocks whoever opens it, a file of any size, a tree
deeper than Python's recursion. Root's code (ocx/node_service, ocx/run_steps,
the tool service) reads or removes such places only through this module,
and tests/guards/test_boundary.py fails on any other touch:

- every name is opened relative to a directory already open, with
  O_NOFOLLOW, one component at a time: no link is followed, anywhere;
- a file is opened O_NONBLOCK (a FIFO opens at once and is refused, never
  waited on) and read only if fstat says it is a regular file with one
  link (a hard link may be someone else's file), and never more than the
  limit the caller names;
- walks and removals keep their own stack, never Python's, and hold a
  bounded number of directories open: a tree of any depth costs no
  recursion error and no running out of descriptors.

Standard library only: the run's stop step and preparation import it.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple  # not dataclasses: a run's preparation imports this (fossil/program.py)

from ..protocol.errors import OcxError

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
OPEN_DIRECTORIES = 32  # at most this many directories open at once in a walk or a removal


class Refused(OcxError, OSError):
    """What a run left is not something root reads: a link, not a regular
    file, a hard link, larger than asked, or a name that climbs out."""


def parts(relative: str | Path) -> list[str]:
    """RELATIVE's components; refused if one is empty, `.` or `..` (never climbs out)."""
    text = str(relative)
    names = text.split("/")
    if text.startswith("/") or any(name in ("", ".", "..") for name in names):
        raise Refused(f"{text!r} is not a plain relative path")
    return names


def open_directory(path: str | Path, relative: str | Path | None = None, *, dir_fd: int | None = None) -> int:
    """An open descriptor of directory PATH, then of each component of
    RELATIVE below it, none of them a link. PATH's own last component is
    not followed either; the directories above it must be root's (a run's
    home is: /var/lib/private/ocx-runs/STEM, which only root can replace)."""
    fd = os.open(path, DIRECTORY, dir_fd=dir_fd)
    try:
        for name in parts(relative) if relative else []:
            below = os.open(name, DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def directory(path: str | Path, relative: str | Path | None = None, *, dir_fd: int | None = None) -> Iterator[int]:
    with _closing(open_directory(path, relative, dir_fd=dir_fd)) as fd:
        yield fd


@contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def regular_file(dir_fd: int, name: str) -> Iterator[tuple[int, os.stat_result]]:
    """NAME in DIR_FD opened for reading, only if it is a regular file with one link."""
    fd = os.open(name, FILE, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is not a regular file")
        if info.st_nlink != 1:
            raise Refused(f"{name} has {info.st_nlink} links: it may be another file's")
        yield fd, info
    finally:
        os.close(fd)


def read_at(dir_fd: int, name: str, limit: int, *, tail: bool = False) -> bytes:
    """At most LIMIT bytes of regular file NAME in DIR_FD: a larger file is
    refused, or with TAIL its last LIMIT bytes are read."""
    with regular_file(dir_fd, name) as (fd, info):
        if info.st_size > limit and not tail:
            raise Refused(f"{name} holds {info.st_size} bytes, more than {limit}")
        offset = max(0, info.st_size - limit) if tail else 0
        chunks, left = [], limit
        while left > 0:
            chunk = os.pread(fd, min(left, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def read_bounded(path: str | Path, limit: int, *, tail: bool = False) -> bytes:
    """At most LIMIT bytes of the regular file PATH, opened without following
    a link, relative to its directory opened the same way (D41)."""
    path = Path(path)
    with directory(path.parent) as parent:
        return read_at(parent, path.name, limit, tail=tail)


def one_line(data: bytes, limit: int = 500) -> str:
    """The last non-empty line of DATA as one line of text: control characters
    (and every other line break Python knows) made spaces, at most LIMIT characters."""
    text = data.decode("utf-8", errors="replace")
    lines = [line for line in text.replace("\r", "\n").split("\n") if line.strip()]
    last = lines[-1] if lines else ""
    cleaned = "".join(" " if (ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029") else c for c in last)
    return " ".join(cleaned.split())[:limit]


def read_last_line(path: str | Path, limit: int = 4096) -> str:
    """A run's last line of output (V1's reason), as one_line, from the last
    LIMIT bytes of PATH; "" when PATH is missing or not a plain file."""
    try:
        return one_line(read_bounded(path, limit, tail=True))
    except OSError:  # missing, a link (ELOOP), a FIFO, a device, a hard link: no reason from it
        return ""


class Entry(NamedTuple):
    """A regular file found by walk: its path below the top, and its lstat."""

    relative: tuple[str, ...]
    info: os.stat_result


def walk(top_fd: int, *, max_depth: int = OPEN_DIRECTORIES, max_entries: int = 100_000) -> Iterator[Entry]:
    """Each regular file below the directory TOP_FD, never through a link, no
    deeper than MAX_DEPTH directories, after at most MAX_ENTRIES names: what
    lies beyond is left unread. Its own stack, never Python's."""
    seen = 0
    stack: list[tuple[int, tuple[str, ...], Iterator[str]]] = [(os.dup(top_fd), (), iter(sorted(os.listdir(top_fd))))]
    try:
        while stack:
            fd, where, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            seen += 1
            if seen > max_entries:
                return
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            if stat.S_ISREG(info.st_mode):
                yield Entry((*where, name), info)
            elif stat.S_ISDIR(info.st_mode) and len(stack) < max_depth:
                try:
                    below = os.open(name, DIRECTORY, dir_fd=fd)
                except OSError:
                    continue  # replaced by a link meanwhile
                stack.append((below, (*where, name), iter(sorted(os.listdir(below)))))
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def remove_tree(path: str | Path) -> None:
    """Remove PATH and all below it, whatever the run made of it, as root:
    never through a link, its own stack, at most OPEN_DIRECTORIES directories
    open. A directory deeper than that is first moved up, below PATH itself,
    and removed from there: a tree of any depth goes. Missing PATH, or a
    missing directory above it: nothing. PATH's parent is opened as
    open_directory opens PATH."""
    path = Path(path)
    try:
        parent_fd = open_directory(path.parent)
    except FileNotFoundError:
        return
    with _closing(parent_fd) as parent:
        try:
            info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path.name, dir_fd=parent)
            return
        with directory(path.name, dir_fd=parent) as top:
            _empty(top)
        os.rmdir(path.name, dir_fd=parent)


def empty_directory(path: str | Path) -> None:
    """Remove all below directory PATH, as remove_tree does, and keep PATH."""
    with directory(path) as top:
        _empty(top)


def _empty(top: int) -> None:
    hoisted = 0
    later = list(os.listdir(top))  # names directly below TOP still to remove
    while later:
        name = later.pop()
        try:
            info = os.stat(name, dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=top)
            continue
        # (directory fd, its name in the directory above, names left in it)
        stack: list[tuple[int, str, list[str] | None]] = [(os.open(name, DIRECTORY, dir_fd=top), name, None)]
        try:
            while stack:
                fd, own, names = stack[-1]
                if names is None:
                    names = list(os.listdir(fd))
                    stack[-1] = (fd, own, names)
                if not names:
                    os.close(fd)
                    stack.pop()
                    os.rmdir(own, dir_fd=stack[-1][0] if stack else top)
                    continue
                child = names.pop()
                child_info = os.stat(child, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(child_info.st_mode):
                    os.unlink(child, dir_fd=fd)
                elif len(stack) < OPEN_DIRECTORIES:
                    stack.append((os.open(child, DIRECTORY, dir_fd=fd), child, None))
                else:  # too deep to hold open: move it up, below TOP, for later
                    hoisted += 1
                    moved = f".ocx-removing-{os.getpid()}-{hoisted}"
                    os.rename(child, moved, src_dir_fd=fd, dst_dir_fd=top)
                    later.append(moved)
        finally:
            for fd, _, _ in stack:
                os.close(fd)


@contextmanager
def private_copy(path: str | Path, limit: int, scratch: str | Path) -> Iterator[Path]:
    """A copy of the regular file PATH (a run's clone, say) in SCRATCH, a
    directory only root can reach, opened as read_bounded opens; refused
    above LIMIT bytes. Whatever reads or runs on the copy never touches the
    run's file, which may meanwhile become a link to anyone's. Removed after."""
    path = Path(path)
    target = Path(scratch) / f"{path.name}.{os.urandom(8).hex()}"
    with directory(path.parent) as parent, regular_file(parent, path.name) as (fd, info):
        if info.st_size > limit:
            raise Refused(f"{path.name} holds {info.st_size} bytes, more than {limit}")
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            offset = 0
            while offset < limit and (chunk := os.pread(fd, min(1 << 20, limit - offset), offset)):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
                offset += len(chunk)
        finally:
            os.close(out)
    try:
        yield target
    finally:
        target.unlink(missing_ok=True)
