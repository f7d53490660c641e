"""Runs' homes made ahead: copies of the runs' clone with their checkouts, kept for the next runs
(docs/node.md, 'Runs' homes made ahead').

Most of a session's preparation was Fossil's checkout: making a check-in's
files costs the kernel 60 to 300 ms on the machines we measure (more while
other writes are pending), and the run waited for it; in a burst, every
run's copy and checkout competed for the same two cores. So when the node
has brought its clone for runs up to date and is idle (node_service/serve.py),
it makes homes ahead, one at a time between its waits, up to the node's
`spare_homes` (config.py), in its own state: each a copy of that version
of `runs.fossil` and Fossil's own `open` of it, the checkout naming its
clone by a relative path (`../repo.fossil`), as the run's home lays them
out. The node moves one into a run's home before it starts the unit
(`take`), and the preparation (run_steps/prepare.py), told so, makes the clone
the run's own as it would a fresh copy (fossil/copies.py). Taking it is a
rename, so each is placed once.

A spare made from the version of the runs' clone the run would copy is
what the preparation would have made, file for file. One made from an
earlier version of the same runs' clone (the same server-code: changed only
by pulls into it, which only add rows and keep every record id its
checkout names) serves too: the preparation copies the newer clone over
it. For a session, only while its checkout is still the tip a fresh one
would check out: made at or after the newest check-in received (`since`),
so a burst of records, each of which moves the runs' clone, takes the
homes made before it. A check-in run takes any, and Fossil's `update`
moves the checkout to its check-in, rewriting only the files that differ.
A run whose copy must pull, and a run prepared by the node itself (D34),
never take one.

Nothing here is state (D2): lost, the next run makes its home itself. Standard
library and ocx.fossil only: the preparation imports it.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ..protocol.numerals import is_digits

CLONE, CHECKOUT = "repo.fossil", "checkout"  # a run's home: its clone and its checkout (D16)
LAYOUT = sorted((CLONE, CHECKOUT))  # all a spare's home holds
SPARES = "spares"  # beside runs.fossil, in the node's state
CLAIMED = ".taken-"  # a spare being moved into a run's home
STALE_CLAIM = 900.0  # longer than a preparation may take (TimeoutStartSec=600): its claim was left by a crash


def spares_of(template: Path) -> Path:
    return template.with_name(SPARES)


PREFIX = "made-from-"  # a spare's name: PREFIX, the mark of the runs' clone it was copied from, a token


def spare_name(mark: int) -> str:
    return f"{PREFIX}{mark}-{os.urandom(4).hex()}"


def mark_of(name: str) -> int | None:
    """The mark a spare named NAME was made from; None for anything else (a claim, one being made)."""
    mark, _, token = name.removeprefix(PREFIX).partition("-")
    return int(mark) if name.startswith(PREFIX) and is_digits(mark) and token else None


LINEAGE = "made-from"  # beside the two, in a spare: the server-code of the runs' clone it was copied from


def pool(template: Path) -> list[tuple[int, Path]]:
    """The spares there are and the mark each was made from, the newest first."""
    try:
        entries = list(os.scandir(spares_of(template)))
    except OSError:
        return []
    found = [(mark, Path(entry.path)) for entry in entries if (mark := mark_of(entry.name)) is not None]
    return sorted(found, key=lambda spare: spare[0], reverse=True)


def _lineage_of(spare: Path) -> str | None:
    try:
        return (spare / LINEAGE).read_text().strip()
    except OSError:
        return None


def make(template: Path, mark: int, *, login: str, lineage: str, count: int, since: int = -1) -> Path | None:
    """One more spare made from TEMPLATE, whose mark is MARK (template.held) and server-code LINEAGE,
    unless COUNT that a run could take are there already; returns it, or None when none was wanted.
    Removed first: the spares of another lineage or made before SINCE (the newest check-in's receipt:
    their checkouts are no session's tip), and what a crash left (never a fresh claim). Runs in the
    node's service, alone: nothing else makes or removes one; the node calls it again while idle."""
    from ..fossil.copies import copy_with_checkout

    spares = spares_of(template)
    spares.mkdir(mode=0o700, exist_ok=True)
    kept = 0
    for entry in os.scandir(spares):
        made = mark_of(entry.name)
        if made is not None and since <= made <= mark and _lineage_of(Path(entry.path)) == lineage:
            kept += 1
        elif made is not None or not entry.name.startswith(CLAIMED) or \
                time.time() - entry.stat(follow_symlinks=False).st_ctime > STALE_CLAIM:
            _remove(Path(entry.path))
    if kept >= count:
        return None
    making = spares / f".making-{os.getpid()}"
    aside = spares / f".home-{os.getpid()}"  # Fossil's ~/.fossil for the checkout, not kept
    wanted = spares / spare_name(mark)
    try:
        making.mkdir(mode=0o700)
        aside.mkdir(mode=0o700)
        copy_with_checkout(template, making, CLONE, CHECKOUT, home=aside, login=login)
        (making / LINEAGE).write_text(lineage + "\n")
        os.rename(making, wanted)
    finally:
        _remove(making)
        _remove(aside)
    return wanted


def take(template: Path, home: Path, *, lineage: str, upto: int, since: int = -1) -> int | None:
    """Move a spare of LINEAGE made from a version of TEMPLATE between SINCE and UPTO (the mark of
    the clone the run copies), the newest there is, into HOME, a run's home before its unit exists;
    returns the mark it was made from, or None. Only where HOME is not there: an earlier attempt's
    home may hold what its run wrote, and its preparation empties it (bounded.empty_directory). The
    spare is renamed first, so it is placed once. The node does this, not the unit's preparation:
    systemd binds a DynamicUser's home into the unit's own mounts, and nothing is renamed into it
    from outside."""
    if os.path.lexists(home):
        return None
    spares = spares_of(template)
    taken = spares / f"{CLAIMED}{home.name}"
    for mark, spare in pool(template):
        if since <= mark <= upto and _lineage_of(spare) == lineage:
            try:
                os.rename(spare, taken)
            except OSError:  # gone meanwhile (the node's own crash left it elsewhere): the next
                continue
            return mark if _placed_from(taken, home) else None
    return None


def _placed_from(taken: Path, home: Path) -> bool:
    made = False
    try:
        home.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(home.parent.parent, 0o700)  # /var/lib/private, as systemd keeps it
        home.mkdir(mode=0o700)
        made = True
        os.rename(taken / CLONE, home / CLONE)
        os.rename(taken / CHECKOUT, home / CHECKOUT)
    except OSError:  # another filesystem (EXDEV), say: the preparation makes the home itself
        if made:
            _remove(home)
        _remove(taken)
        return False
    try:  # what is left is the node's own lineage file: no tree to walk (a burst takes one a run)
        os.unlink(taken / LINEAGE)
        os.rmdir(taken)
    except OSError:
        _remove(taken)
    return True


def placed(home: Path) -> bool:
    """Whether HOME holds a spare as `place` leaves it: the clone a regular file, the checkout a
    directory, neither a link, and nothing else."""
    import stat

    try:
        names = sorted(os.listdir(home))
        clone, checkout = os.lstat(home / CLONE), os.lstat(home / CHECKOUT)
    except OSError:
        return False
    return names == LAYOUT and stat.S_ISREG(clone.st_mode) and stat.S_ISDIR(checkout.st_mode)


def _remove(path: Path) -> None:
    """PATH gone, never following a link (the node's own state; a checkout may hold a check-in's links)."""
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path)
    except FileNotFoundError:
        pass
