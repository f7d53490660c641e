"""Which OCX the node's own units run: the release `current` names, else the installation's (D46, D47).

Every unit OCX installs, Fossil's hook and the ext programs name one stable path, the launcher
(LAUNCHER, a shell script `ocx node init` writes, root's, 0755). It reads `current` once and execs
that release's own `releases/ID/bin/python`, by the release's directory, never through the link;
with no release current (a node installed but never moved) it execs the installation's python. So an
accept or roll-back changes what a unit runs at its next start, with no unit file rewritten, and
`systemctl cat` shows the launcher while the process's /proc/PID/cmdline names releases/ID.

A process started so knows its release from its own prefix (`serving_release`); the node service
names that release's python in each run's unit (`runs_python`): a run started before an accept keeps
the release it started with to its stop step (D47).

Root's code reads only the releases' root, root's alone (links.py); nothing here reads a run's bytes.
"""
from __future__ import annotations

import os
import re
import sys

from ..host_paths import RELEASES_DIRECTORY

LAUNCHER = "/usr/local/libexec/ocx-python"
_ID = re.compile(r"[0-9a-f]{16}-[0-9a-f]{16}", re.ASCII)
_DOOR = re.compile(r"[a-z_]{1,40}", re.ASCII)


def launcher_text(python: str, package: str, root: str = RELEASES_DIRECTORY) -> str:
    """The launcher: PYTHON is the installation's (NodeConfig.python), PACKAGE its `ocx` directory,
    where its doors are. `--door NAME ARGS` runs the door ocx/page/NAME.py of the same OCX by its
    path (a standard-library script, `-I -S`: it starts quickly); anything else is python's arguments."""
    for given in (python, package, root):
        if not given.startswith("/") or any(c in given for c in "'\"\\$`\n"):
            raise ValueError(f"python: {given!r} is not a plain absolute path")
    return f"""#!/bin/sh
# OCX's python for the node's own units, Fossil's hook and the ext programs (docs/releases.md):
# the release {root}/current names, by its own directory (read once here: the process
# keeps its release, D47), else the installation's. Written by `ocx node init`.
python='{python}'
doors='{package}/page'
release=$(readlink '{root}/current' 2>/dev/null) || release=
case $release in
    *[!0-9a-f-]*|'') ;;
    *) if [ -x '{root}/'"$release/bin/python" ]; then
           python='{root}/'"$release/bin/python"
           for found in '{root}/'"$release"/lib/python3*/site-packages/ocx/page; do
               [ -d "$found" ] && doors=$found
           done
       fi ;;
esac
if [ "$1" = --door ]; then
    case $2 in *[!a-z_]*|'') echo "ocx-python: --door: not a door's name" >&2; exit 2 ;; esac
    door=$2
    shift 2
    exec "$python" -I -S "$doors/$door.py" "$@"
fi
exec "$python" "$@"
"""


def door_command(door: str) -> str:
    """How an ext program runs a door of ocx/page/ through the launcher."""
    if not _DOOR.fullmatch(door):
        raise ValueError(f"door: {door!r} is not a door's name")
    return f"{LAUNCHER} --door {door}"


def serving_release(prefix: str = sys.prefix, root: str = RELEASES_DIRECTORY) -> str | None:
    """The release this process runs from (its directory, releases/ID), or None for the installation."""
    real, home = os.path.realpath(prefix), os.path.realpath(root)
    if os.path.dirname(real) == home and _ID.fullmatch(os.path.basename(real)):
        return real
    return None


def runs_python(installation: str, prefix: str = sys.prefix, root: str = RELEASES_DIRECTORY) -> str:
    """The python each run's unit names (its preparation, stop step, cpu watch, feeder: D47): this
    process's own release's, by its directory; the installation's when it runs from none."""
    release = serving_release(prefix, root)
    return os.path.join(release, "bin", "python") if release is not None else installation
