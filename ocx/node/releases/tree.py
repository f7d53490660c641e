"""A release's files read and copied without trusting them (D41, D48).

A staged release was written by the build's unprivileged user, so every path
under `staged/` is walked from directory descriptors with O_NOFOLLOW: a link
is read as a link (its target is part of the digest) and never followed, a
directory swapped for a link mid-walk is refused, and the walk is bounded in
entries and bytes. The copy root makes is its own (root's, modes without
set-id bits); its digest is computed again from the copy, so what was checked
is what runs.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

from ...protocol.errors import OcxError

MAX_ENTRIES = 200_000  # a virtual environment with OCX's dependencies holds about 5,000
MAX_BYTES = 2 << 30  # and about 150 MiB
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class TreeError(OcxError, ValueError):
    """A release's files that cannot be taken as they are: too many, too large, or neither file,
    directory nor link (a fifo or device would block or lie)."""


@dataclass
class _Budget:
    entries: int = 0
    bytes: int = 0

    def take(self, entries: int = 0, size: int = 0) -> None:
        self.entries += entries
        self.bytes += size
        if self.entries > MAX_ENTRIES:
            raise TreeError(f"more than {MAX_ENTRIES} files")
        if self.bytes > MAX_BYTES:
            raise TreeError(f"more than {MAX_BYTES >> 20} MiB")


def tree_digest(path: str) -> str:
    """The digest of the tree at PATH: every entry's relative path, kind, permission bits and
    content (a link's target), in sorted order. The same files give the same digest wherever
    they lie and whoever owns them."""
    digest = hashlib.sha256()
    _walk(path, None, digest, _Budget())
    return digest.hexdigest()


def copy_tree(source: str, target: str) -> str:
    """Copy the tree at SOURCE to TARGET (which must not exist), taking nothing but files,
    directories and links, and return the copy's own digest (read back from TARGET)."""
    os.mkdir(target, 0o755)
    _walk(source, target, None, _Budget())
    return tree_digest(target)


def _walk(source: str, target: str | None, digest: hashlib._Hash | None, budget: _Budget) -> None:
    fd = os.open(source, _DIR_FLAGS)
    out = os.open(target, _DIR_FLAGS) if target is not None else None
    try:
        _directory(fd, out, "", digest, budget)
    finally:
        os.close(fd)
        if out is not None:
            os.close(out)


def _directory(fd: int, out: int | None, prefix: str, digest: hashlib._Hash | None, budget: _Budget) -> None:
    for name in sorted(os.listdir(fd)):
        budget.take(entries=1)
        relative = f"{prefix}{name}"
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        mode = stat.S_IMODE(info.st_mode) & 0o755  # no set-id, sticky or group/other write
        if stat.S_ISLNK(info.st_mode):
            link = os.readlink(name, dir_fd=fd)
            _feed(digest, b"l", relative, mode=0, content=os.fsencode(link))
            if out is not None:
                os.symlink(link, name, dir_fd=out)
        elif stat.S_ISDIR(info.st_mode):
            _feed(digest, b"d", relative, mode=0)  # a directory is made 0755 in a copy, whatever it was
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            child_out = None
            try:
                if out is not None:
                    os.mkdir(name, 0o755, dir_fd=out)
                    child_out = os.open(name, _DIR_FLAGS, dir_fd=out)
                _directory(child, child_out, relative + "/", digest, budget)
            finally:
                os.close(child)
                if child_out is not None:
                    os.close(child_out)
        elif stat.S_ISREG(info.st_mode):
            _file(fd, out, name, relative, mode, digest, budget)
        else:
            raise TreeError(f"{relative!r} is neither a file, a directory nor a link")


def _file(fd: int, out: int | None, name: str, relative: str, mode: int, digest: hashlib._Hash | None,
          budget: _Budget) -> None:
    source = os.open(name, _FILE_FLAGS, dir_fd=fd)
    written = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=out) \
        if out is not None else None
    content = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):  # swapped after the stat above
            raise TreeError(f"{relative!r} changed while it was read")
        while chunk := os.read(source, _CHUNK):
            budget.take(size=len(chunk))
            content.update(chunk)
            if written is not None:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(written, view):]
        if written is not None:
            os.fchmod(written, mode)
    finally:
        os.close(source)
        if written is not None:
            os.close(written)
    _feed(digest, b"f", relative, mode=mode, content=content.digest())


def _feed(digest: hashlib._Hash | None, kind: bytes, relative: str, *, mode: int, content: bytes = b"") -> None:
    if digest is None:
        return
    name = os.fsencode(relative)
    digest.update(kind + len(name).to_bytes(4, "big") + name + mode.to_bytes(2, "big")
                  + len(content).to_bytes(4, "big") + content)
