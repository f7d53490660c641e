"""A runner's shared homes (D14), each run working in its own copy (D16).

A runner page's `homes` hold what every run of that runner shares: its
sign-in, settings, sessions. D14 binds them read-write into each run, but
each run has a dynamic user of its own (D16), and files written 0600 by one
run (a sign-in always is) cannot be read or rewritten by the next: a bound
home never carries a sign-in from one run to the next (seen on the test
node, docs/runners.md). So a run gets a copy instead, made as root when its
home is prepared and given to its user, bound at the home's own path; when
the run has ended, the node writes back, as root, each regular file the run
changed. Runs at once each see the home as it was at their start, and the
last to end wins a file both changed.

What is copied back is chosen from the record's directory, which the run
cannot write, never from anything inside the run's home; and only regular
files are copied back, never a link, so a run cannot make root read or write
anything but its own home's files.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

COPIES = ".runner-homes"  # inside the run's home: one directory per page home, by its index


def copy_path(run_home: Path, index: int) -> Path:
    return run_home / COPIES / str(index)


def map_file(marks: Path, stem: str) -> Path:
    """Which host home each copy came from, in the record's directory (trusted)."""
    return marks / f"homes-{stem}.json"


def copy_in(homes: list[str], run_home: Path, marks: Path, stem: str, at: float) -> None:
    """Each of HOMES into the run's home, before the run starts."""
    made = []
    for index, home in enumerate(homes):
        copy = copy_path(run_home, index)
        if copy.exists():
            shutil.rmtree(copy)
        copy.parent.mkdir(mode=0o700, exist_ok=True)
        if os.path.isdir(home):
            shutil.copytree(home, copy, symlinks=True)
        else:
            copy.mkdir(mode=0o700)  # written back as a new home when the run ends
        made.append({"home": home, "copy": str(copy)})
    if made:
        temporary = map_file(marks, stem).with_suffix(".tmp")
        temporary.write_text(json.dumps({"at": at, "homes": made}) + "\n")
        os.replace(temporary, map_file(marks, stem))


def copy_back(marks: Path, stem: str) -> int:
    """Write back what the ended run changed in its copies; returns how many
    files. Once: the map is removed after."""
    path = map_file(marks, stem)
    try:
        written = json.loads(path.read_text())
    except FileNotFoundError:
        return 0
    count = 0
    for entry in written["homes"]:
        count += _copy_changed(Path(entry["copy"]), Path(entry["home"]), written["at"])
    path.unlink()
    return count


def _copy_changed(copy: Path, home: Path, since: float) -> int:
    if not copy.is_dir() or copy.is_symlink():
        return 0
    count = 0
    for directory, subdirectories, files in os.walk(copy):  # os.walk never follows links
        relative = Path(directory).relative_to(copy)
        for name in files:
            source = Path(directory) / name
            if source.is_symlink() or not source.is_file() or source.lstat().st_mtime <= since:
                continue
            target = home / relative / name
            if not _make_directories(home, relative) or target.is_symlink():
                continue  # a home's own link is the host's to keep, never written through
            temporary = target.with_name(f".{name}.ocx-{os.getpid()}")
            shutil.copyfile(source, temporary, follow_symlinks=False)
            os.chmod(temporary, source.lstat().st_mode & 0o777)
            os.replace(temporary, target)
            count += 1
        subdirectories[:] = [d for d in subdirectories if not (Path(directory) / d).is_symlink()]
    return count


def _make_directories(home: Path, relative: Path) -> bool:
    """The directories down to RELATIVE under HOME, root's; False where a link stands in the way."""
    if not home.exists():
        home.mkdir(mode=0o700, parents=True)
    current = home  # the home itself may be a link: the host's choice
    for part in relative.parts:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return False
        if not current.exists():
            current.mkdir(mode=0o700)
    return True
