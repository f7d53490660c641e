"""The node's clone for runs: made over HTTP as the node user, pulled when the node goes idle (issue 15).

Each run's preparation copies it (fossil/copies.py) instead of cloning over
HTTP. `ocx node init` makes it, while nobody else clones: Fossil's server
holds its write lock for each whole request of a sync, so two clones of a
large repository at once can both fail ("database is locked"). It is no
state (D2): lost, the next start of a run clones it again. Beside it,
`runs.json` says up to which receipt it holds everything, and when it was
pulled. The node pulls it when it goes idle, and before it starts a run
whose copy would lack what the run was given (`ensure`): a command run's
check-in; for a session, what was received more than a minute before its
record. So a burst of sessions makes at most one pull a minute, not one a
run, each of which would hold the server's write lock while posts wait.
Should that pull fail, the run's preparation pulls as the run user.
Standard library and ocx.fossil only: the preparation reads the mark.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.copies import make_template, refresh_template
from ..fossil.repository import Repository

if TYPE_CHECKING:
    from .config import NodeConfig

TEMPLATE, MARK = "runs.fossil", "runs.json"  # the mark beside it: unit/prepare.py reads it too


FRESH_SECONDS = 60.0  # a session's clone lacks nothing received more than this before its record


def template_path(config: "NodeConfig") -> Path:
    return config.state_dir / TEMPLATE


def held(template: Path) -> tuple[int, float]:
    """(the receipt the node's clone holds everything up to, when it was pulled); (-1, 0) unknown."""
    try:
        mark = json.loads(template.with_name(MARK).read_text())
        return int(mark["rcvid"]), float(mark.get("at", 0.0))
    except (OSError, ValueError, KeyError, TypeError):
        return -1, 0.0


def lacks(template: Path, *, checkin_rcvid: int | None = None, record_received: float | None = None) -> bool:
    """Whether a run's copy must pull before its checkout: a command run's
    check-in came after the node's clone was pulled; a session's record came
    more than FRESH_SECONDS after it (a burst, or a node busy for long)."""
    rcvid, at = held(template)
    if checkin_rcvid is not None:
        return rcvid < checkin_rcvid
    return record_received is not None and at < record_received - FRESH_SECONDS


def ensure(config: "NodeConfig", *, checkin_rcvid: int | None = None, record_received: float | None = None,
           log=None) -> Path:
    """The template, made if missing, and pulled first when a run's copy of
    it would lack what the run was given (`lacks`)."""
    path = current(config, -1, log)
    if lacks(path, checkin_rcvid=checkin_rcvid, record_received=record_received):
        current(config, None, log)
    return path


def _write_mark(config: "NodeConfig", rcvid: int, at: float) -> None:
    path = config.state_dir / MARK
    temporary = path.with_name(f".{MARK}.{os.getpid()}")
    temporary.write_text(json.dumps({"rcvid": rcvid, "at": at}) + "\n")
    os.replace(temporary, path)


def current(config: "NodeConfig", needed: int | None = None, log=None) -> Path:
    """The template, pulled first when it lacks a receipt up to NEEDED (all, for
    None; -1: only made if missing). A pull that fails leaves the one there,
    which a run can still use: its own clone pulls what it lacks."""
    path = template_path(config)
    if needed == -1 and path.exists():
        return path
    pulled_at = time.time()  # it will hold everything received before this
    with Repository(config.repository) as repository:
        newest = repository.max_rcvid()
    wanted = newest if needed is None else min(needed, newest)
    if path.exists() and held(path)[0] >= wanted:
        return path
    began, existed = time.monotonic(), path.exists()
    home = config.state_dir / "home"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if existed:
            refresh_template(path, config.url, config.node_user, config.node_password(), home=home)
        else:
            make_template(path, config.url, config.node_user, config.node_password(), home=home)
    except Exception as error:
        if not path.exists():
            raise
        if log:
            log(f"runs' clone not pulled ({error}); runs start from receipt {held(path)[0]}", priority=4)
        return path
    _write_mark(config, newest, pulled_at)
    if log:
        log(f"runs' clone {'pulled' if existed else 'made'} through receipt {newest} "
            f"in {time.monotonic() - began:.3f} s", priority=7)
    return path
