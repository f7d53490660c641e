"""The repository of OCX's source a node stages check-ins from (D45): the served repository, unless
the node's configuration names another (a Fossil repository file on the node, say OCX's own
development repository served by another node here).

The choice is a file of its own beside the node's configuration, `/etc/ocx/NAME.release-source`
holding `{"release_source": "/ABSOLUTE/PATH.fossil"}`, never a field of `/etc/ocx/NAME.json`: that
file is read with unknown fields refused (config.py), by every release the node may roll back to and
by a staged release's smoke, so a new field there would make an older release refuse the node's
configuration (the same choice as `NAME.follow-releases`, following.py). Its name ends in no
`.json`: every `/etc/ocx/*.json` is a node's configuration (host_paths.configured_nodes). Root's,
0644 (no secret). Absent: the served repository. Present but unreadable, linked, oversized or
malformed: a stage from a check-in is refused naming `release_source`, never quietly taken from the
served repository instead. The repository it names is read through the Fossil layer only
(fossil/checkin_tree.py `source_repository`), never run or imported as root (D41, D48).
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..config import CONFIG_DIR

SOURCE_KEY = "release_source"
_MOST_BYTES = 4096


def source_file(name: str, config_dir: Path | None = None) -> Path:
    return (config_dir or CONFIG_DIR) / f"{name}.release-source"


def named_source(name: str, config_dir: Path | None = None) -> str | None:
    """The repository node NAME's configuration names as its release source, None when it names none;
    ValueError naming `release_source` when the file is there and cannot be taken as it is."""
    path = source_file(name, config_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"{SOURCE_KEY}: {path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as given:
        if not stat.S_ISREG(os.fstat(given.fileno()).st_mode):
            raise ValueError(f"{SOURCE_KEY}: {path} is not a regular file")
        text = given.read(_MOST_BYTES + 1)
    try:
        found = json.loads(text) if len(text) <= _MOST_BYTES else None
    except ValueError:
        found = None
    named = found.get(SOURCE_KEY) if isinstance(found, dict) and set(found) == {SOURCE_KEY} else None
    if not isinstance(named, str) or not os.path.isabs(named) or "\0" in named:
        raise ValueError(f"{SOURCE_KEY}: {path} does not hold {{\"{SOURCE_KEY}\": ABSOLUTE_PATH}}")
    return named


def set_source(name: str, repository: str | None, config_dir: Path | None = None) -> Path:
    """The choice written (REPOSITORY, or None: the served repository again), root's and 0644; its path."""
    path = source_file(name, config_dir)
    if repository is None:
        path.unlink(missing_ok=True)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = f"{path}.new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({SOURCE_KEY: repository}) + "\n")
    os.replace(temporary, path)
    return path
