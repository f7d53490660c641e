"""The node's clone for runs: made over HTTP as the node user, pulled when the node goes idle
(docs/node.md, 'The run's clone is a copy').

Each run's preparation copies it (fossil/copies.py) instead of cloning over
HTTP. `ocx node init` makes it, while nobody else clones: Fossil's server
holds its write lock for each whole request of a sync, so two clones of a
large repository at once can both fail ("database is locked"). It is no state (D2): lost, the
next start of a run clones it again. Beside it, `runs.json` says up to
which receipt it holds everything. The node pulls it when it goes idle,
and before it starts a run whose copy would lack what the run was given
(`ensure`): for a command run, its check-in's receipt; for a session,
everything received up to its record but the record itself (so on a quiet
node, pulled when it went idle, a record alone makes no pull). A pull
brings everything there is, so a burst of records makes one pull a pass,
not one a run, each of which would hold the server's write lock while
posts wait. Should that pull fail, the run's preparation pulls as the run
user (`Preparation.pull`). A check-in run prepared in its unit is started
before the pull, and its preparation waits for the mark (`held_within`).
Standard library and ocx.fossil only: the preparation reads the mark.

Every number here is a receipt of the node's own repository (config.repository),
the mark's included: on the server's node the served repository, on a node
elsewhere its clone, whose receipts are its own pulls. A node elsewhere's
pass acts on the server's receipts (D37), whose numbers count something
else; so a record's place is looked up in the node's repository by its hash
(`ensure_before`), never taken from the pass.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomically
from ..fossil.copies import lacking, make_template, refresh_template
from ..fossil.errors import FOSSIL_FAILURES, FossilLayerError, UnknownArtifact

if TYPE_CHECKING:
    from .config import NodeConfig
    from .node_log import NodeLog

TEMPLATE, MARK = "runs.fossil", "runs.json"  # the mark beside it: run_steps/prepare.py reads it too


class NotPulled(FossilLayerError):
    """A pull that exited 0 and left artifacts out (Fossil 2.21 does when it cannot reach the server)."""


def template_path(config: NodeConfig) -> Path:
    return config.state_dir / TEMPLATE


def held(template: Path) -> int:
    """The receipt the node's clone holds everything up to; -1 unknown."""
    try:
        return int(json.loads(template.with_name(MARK).read_text())["rcvid"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def held_within(template: Path, needed: int, timeout: float) -> bool:
    """Whether the node's clone comes to hold everything up to NEEDED within TIMEOUT seconds: woken
    by `runs.json` renamed into place beside it (inotify), not by a timer's polls."""
    import os
    import select

    from .inotify import IN_MOVED_TO, drain, watch

    if held(template) >= needed:
        return True
    fd = watch(str(template.parent), IN_MOVED_TO)
    try:
        deadline = time.monotonic() + timeout
        while held(template) < needed:  # read again once watched: a rename before it is not missed
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([fd], [], [], left)
            drain(fd)
        return True
    finally:
        os.close(fd)


def lineage(template: Path) -> str:
    """The runs' clone's server-code: kept by every pull (into it, in place), new when it is made
    again (a clone of its own), so it says whether two versions share their record ids (spare.py)."""
    from ..fossil.repository import Repository

    with Repository(template) as clone:
        return clone.server_code


def lacks(template: Path, needed: int) -> bool:
    """Whether a run's copy must pull before its checkout: the node's clone
    holds receipts only up to before NEEDED (`ensure`)."""
    return held(template) < needed


def ensure(config: NodeConfig, needed: int, *, besides: str | None = None, log: NodeLog | None = None) -> bool:
    """The template, made if missing, and pulled first unless it holds every
    receipt up to NEEDED that stored anything but BESIDES (a session's record:
    its run needs what came before it, and hears of the record itself by
    delivery). True if a run's copy of it must still pull (the pull failed)."""
    from ..fossil.repository import Repository  # not on a preparation's way (run_steps/prepare.py)

    path = current(config, -1, log)
    rcvid = held(path)
    if rcvid >= needed:
        return False
    if besides is not None:
        with Repository(config.repository) as repository:
            newest = repository.newest_receipt_besides(rcvid, needed, besides)
        if newest is None:
            return False
        needed = newest
    current(config, needed, log)
    return lacks(path, needed)


def ensure_before(config: NodeConfig, record_hash: str, *, log: NodeLog | None = None) -> bool:
    """`ensure` for a session's record: everything the node's repository received up to the
    receipt that brought RECORD_HASH, but the record itself (its run hears of it by delivery).
    True if a run's copy must still pull."""
    from ..fossil.repository import Repository  # not on a preparation's way (run_steps/prepare.py)

    with Repository(config.repository) as repository:
        try:
            needed = repository.sender(record_hash).rcvid
        except UnknownArtifact:
            needed = None
        if needed is None:  # not here (the pass acts only once it is): everything there is
            needed = repository.max_rcvid()
    before = held(template_path(config))
    pull = ensure(config, needed, besides=record_hash, log=log)
    if log and not pull and held(template_path(config)) == before >= 0:
        log(f"runs' clone holds what came before {record_hash[:12]} (receipt {needed} here): no pull", priority=7)
    return pull


def _write_mark(config: NodeConfig, rcvid: int, at: float) -> None:
    write_atomically(config.state_dir / MARK, json.dumps({"rcvid": rcvid, "at": at}) + "\n")


def current(config: NodeConfig, needed: int | None = None, log: NodeLog | None = None) -> Path:
    """The template, pulled first when it lacks a receipt up to NEEDED (all, for
    None; -1: only made if missing). A pull that fails leaves the one there,
    which a run can still use: its own clone pulls what it lacks."""
    from ..fossil.repository import Repository  # not on a preparation's way (run_steps/prepare.py)
    from .oversized import refuse_oversized

    path = template_path(config)
    if needed == -1 and path.exists():
        return path
    pulled_at = time.time()  # when: for people reading runs.json
    with Repository(config.repository) as repository:
        newest = repository.max_rcvid()
        wanted = newest if needed is None else min(needed, newest)
        if path.exists() and held(path) >= wanted:
            return path
        # What run users sent past the cap, shunned before this pull carries it (oversized.py). A node
        # elsewhere's clone names no sender but its own user: nothing there, the server's node shuns.
        refuse_oversized(config, repository, max(held(path), 0), newest, log or _unlogged)
    began, existed, before = time.monotonic(), path.exists(), held(path)
    home = config.state_dir / "home"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if existed:
            refresh_template(path, config.url, config.node_user, config.node_password(), home=home)
            _check_pulled(config, path, before, newest)
        else:
            make_template(path, config.url, config.node_user, config.node_password(), home=home)
    except FOSSIL_FAILURES as error:
        if not path.exists():
            raise
        if log:
            log(f"runs' clone not pulled ({error}); runs start from receipt {held(path)}", priority=4)
        return path
    _write_mark(config, newest, pulled_at)
    if log:
        log(f"runs' clone {'pulled' if existed else 'made'} through receipt {newest} "
            f"in {time.monotonic() - began:.3f} s", priority=7)
    return path


def _unlogged(text: str, /, **_fields: object) -> None:
    """Where a caller gave no log: the node's own passes and starts always give one."""


def _check_pulled(config: NodeConfig, path: Path, after: int, upto: int) -> None:
    """The mark moves only once the clone holds every public artifact received
    after AFTER up to UPTO (copies.lacking: a pull may fail and exit 0)."""
    missing = lacking(path, config.repository, after, upto)
    if missing:
        raise NotPulled(f"{missing} artifacts received up to receipt {upto} not pulled")
