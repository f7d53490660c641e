"""Writing a file whole, the one way OCX does it: readers see the old file
or the new one, never half of it.

Standard library only: the privileged steps systemd runs per run (ocx.run_steps)
and the stop step's reader (ocx.systemd.stoppost) import it and must start fast.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any

Stamp = tuple[int, int, int]  # a file's inode, mtime and size: a file written again (aside, renamed) differs


def write_atomically(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    """Write TEXT to PATH through a temporary beside it, then rename it over PATH."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(temporary, mode)  # whatever the umask took away
    os.replace(temporary, path)


class StampedReads:
    """What a parse made of each file, by a key, kept with the stamp of the file it was made from and made
    again only once the file changed: for files a pass reads for every record (a record's saved body,
    record_dirs.py; its letters note, letters.py). Past AT_MOST keys it forgets them all and reads again."""

    def __init__(self, at_most: int = 4096) -> None:
        self.at_most = at_most
        self._by_path: dict[str, tuple[Stamp, Any]] = {}

    def __len__(self) -> int:
        return len(self._by_path)

    def read(self, key: str, path: Path, parse: Callable[[Path], Any]) -> Any:
        """PARSE(PATH), or what it made of the file as it is now; OSError when PATH is not there, and
        whatever PARSE raises (nothing then kept)."""
        found = os.stat(path)
        stamp = (found.st_ino, found.st_mtime_ns, found.st_size)
        cached = self._by_path.get(key)
        if cached is None or cached[0] != stamp:
            parsed = parse(path)
            if len(self._by_path) >= self.at_most:
                self._by_path.clear()
            cached = self._by_path[key] = (stamp, parsed)
        return cached[1]

    def forget(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._by_path.pop(key, None)
