"""A runner's shared homes (D14): copied into each run, only named files back (D42).

A runner page's `homes` hold what every run of that runner shares: its
sign-in, settings, sessions. Each run has a dynamic user of its own (D16),
so a home bound read-write could not carry a 0600 sign-in from one run to
the next; and a run that could write a shared home could leave settings or
hooks that every later run of that runner, for other records, would
execute. So (D42) each run gets a copy, made as root when its home is
prepared and given to its user, bound at the home's own path; when the run
has ended, the node writes back only the files the page names in `keep`
for that home (an agent's sign-in file), each a regular file of at most
KEPT_BYTES, read through bounded.py: never through a link, never a FIFO,
never a tree walked. Everything else the run changed is dropped.

What is written back, and from which copy to which home, is read from the
map in the record's directory, which the run cannot write (D41), never from
anything inside the run's home. Runs at once each see the home as it was
at their start; the last to end wins a file both changed.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from ..files import write_atomically
from . import bounded

COPIES = ".runner-homes"  # inside the run's home: one directory per page home, by its index
KEPT_BYTES = 1 << 20  # a sign-in file is a few KiB


def copy_path(run_home: Path, index: int) -> Path:
    return run_home / COPIES / str(index)


def map_file(marks: Path, stem: str) -> Path:
    """Which host home each copy came from and what it keeps, in the record's directory (trusted)."""
    return marks / f"homes-{stem}.json"


def copy_in(homes: list[str], run_home: Path, marks: Path, stem: str, at: float,
            keep: tuple[tuple[int, str], ...] = ()) -> None:
    """Each of HOMES into the run's home, before the run starts; KEEP names,
    by index in HOMES, the files written back when it ends (D42)."""
    made = []
    for index, home in enumerate(homes):
        copy = copy_path(run_home, index)
        bounded.remove_tree(copy)  # a copy left by an attempt that was cut off: the run's shapes
        copy.parent.mkdir(mode=0o700, exist_ok=True)
        if os.path.isdir(home):
            shutil.copytree(home, copy, symlinks=True)  # the host's home: root's, only kept files ever came back
        else:
            copy.mkdir(mode=0o700)  # written back as a new home when the run ends
        made.append({"home": home, "index": index, "keep": [name for i, name in keep if i == index]})
    if made:
        write_atomically(map_file(marks, stem), json.dumps({"at": at, "homes": made}) + "\n")


def copy_back(marks: Path, stem: str, run_home: Path | None = None) -> int:
    """Write back the kept files the ended run changed in its copies; returns
    how many. Once: the map is removed after."""
    path = map_file(marks, stem)
    try:
        written = json.loads(path.read_text())
    except FileNotFoundError:
        return 0
    if run_home is None:
        from .run_layout import RunHome

        run_home = RunHome(stem).on_host
    count = 0
    for entry in written["homes"]:
        for name in entry.get("keep", []):
            count += _write_back(run_home, int(entry["index"]), name, Path(entry["home"]), written["at"])
    path.unlink()
    return count


def _write_back(run_home: Path, index: int, name: str, home: Path, since: float) -> int:
    """The run's NAME in its copy INDEX, if it is a plain file it changed, into HOME; 1 if written."""
    *directories, base = bounded.parts(name)
    try:  # from the home down, every component opened without following a link (D41)
        with bounded.directory(run_home, "/".join([COPIES, str(index), *directories])) as source:
            info = os.stat(base, dir_fd=source, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or info.st_mtime <= since:
                return 0  # not there, not a plain file, or not changed by the run
            data = bounded.read_at(source, base, KEPT_BYTES)
    except OSError:  # missing, a link on the way, a FIFO, a hard link, too large: nothing comes back
        return 0
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # the home itself may be a link: the host's choice
    target = os.open(home, bounded.DIRECTORY & ~os.O_NOFOLLOW)
    try:
        for part in directories:  # the home's own directories, made root's; never through a link in it
            try:
                os.mkdir(part, 0o700, dir_fd=target)
            except FileExistsError:
                pass
            below = os.open(part, bounded.DIRECTORY, dir_fd=target)
            os.close(target)
            target = below
        existing = _lstat(base, target)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            return 0  # a home's own link is the host's to keep, never written through
        temporary = f".{base}.ocx-{os.urandom(4).hex()}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=target)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, base, src_dir_fd=target, dst_dir_fd=target)
        return 1
    except OSError:
        return 0  # a link where a directory of the home should be: nothing written there
    finally:
        os.close(target)


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
