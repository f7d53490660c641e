"""`ocx node init`'s part for /ext/git (D49): the door Fossil runs for a git
client (ocx/page/git_door.py), and Fossil's HTTP Basic authorization, so a git
client can fetch as a login. The repository it serves is made by the node's
service after its first pass (node_service/git_update.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil import admin
from ..node.config import NodeConfig
from ..node.host_paths import git_served_root
from ..node.releases.serving import door_command

if TYPE_CHECKING:
    from .init import InitReport


def git_door_program(name: str) -> str:
    """The ext program for /ext/git: the door, a standard-library script the launcher runs by its path,
    the release `current` names, else the installation's (ocx/node/releases/serving.py)."""
    return f"#!/bin/sh\nexec {door_command('git_door')} {git_served_root(name)}\n"


def install(config: NodeConfig, home: Path, report: InitReport) -> None:
    program = config.extroot / "git"  # root's, 0755, like /ext/ocx's: the server's account cannot change it
    text = git_door_program(config.name)
    changed = not program.exists() or program.read_text() != text
    if changed:
        config.extroot.mkdir(parents=True, exist_ok=True)
        program.write_text(text)
    if changed or program.stat().st_mode & 0o777 != 0o755:
        os.chmod(program, 0o755)
    report.add(f"git door {program} (/ext/git, D49)", changed)
    report.add("setting http_authentication_ok = 1 (git clients log in, D49)",
               admin.allow_http_authentication(config.repository, home=home))
