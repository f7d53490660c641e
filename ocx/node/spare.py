"""A run's home made ahead: a copy of the runs' clone and its checkout, kept for the next session (issue 15).

Most of a quiet session's preparation was Fossil's checkout: making a
check-in's files costs the kernel 60 to 300 ms on the machines we measure
(more while other writes are pending), and the run waited for it. So when
the node has brought its clone for runs up to date and is idle
(service/serve.py), it makes one home ahead, in its own state: a copy of
that version of `runs.fossil` and Fossil's own `open` of it, the checkout
naming its clone by a relative path (`../repo.fossil`), as the run's home
lays them out. A session's preparation (unit/prepare.py) takes it instead
of copying and checking out, when it was made from the version of the
runs' clone the preparation would copy (`runs.json`'s mark): then it is
what the preparation would have made, file for file. The node moves it into
the session's home before it starts the unit (`place`), and the preparation,
told so, makes the clone the run's own as it would a fresh copy
(fossil/copies.py). Taking it is a rename, so it is placed once.

A check-in run's check-in arrived a moment before, after any spare was
made. It takes one made from an earlier version of the same runs' clone
(`older`: the same server-code, so made by pulls into copies of it, which
only add rows and keep every record id its checkout names): its preparation
copies the pulled clone over the spare's, and Fossil's `update` moves the
checkout to the check-in, rewriting only the files that differ. A run whose
copy must pull, and a run prepared by the node itself (D34), never take one.

Nothing here is state (D2): lost, the next run makes its home itself. Standard
library and ocx.fossil only: the preparation imports it.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

CLONE, CHECKOUT = "repo.fossil", "checkout"  # a run's home: its clone and its checkout (D16)
LAYOUT = sorted((CLONE, CHECKOUT))  # all a spare's home holds
SPARES = "spares"  # beside runs.fossil, in the node's state
CLAIMED = ".taken-"  # a spare being moved into a run's home
STALE_CLAIM = 900.0  # longer than a preparation may take (TimeoutStartSec=600): its claim was left by a crash


def spares_of(template: Path) -> Path:
    return template.with_name(SPARES)


def spare_name(mark: int) -> str:
    return f"made-from-{mark}"


LINEAGE = "made-from"  # beside the two, in a spare: the server-code of the runs' clone it was copied from


def make(template: Path, mark: int, *, login: str, lineage: str) -> Path | None:
    """The spare made from TEMPLATE, whose mark is MARK (template.held) and server-code LINEAGE,
    unless one is there; any other is removed. Runs in the node's service, alone: nothing else
    makes or removes one."""
    from ..fossil.copies import copy_with_checkout

    spares = spares_of(template)
    spares.mkdir(mode=0o700, exist_ok=True)
    wanted = spares / spare_name(mark)
    for entry in os.scandir(spares):  # older versions, and what a crash left (never a fresh claim)
        if entry.path != str(wanted) and (not entry.name.startswith(CLAIMED)
                                          or time.time() - entry.stat(follow_symlinks=False).st_ctime > STALE_CLAIM):
            _remove(Path(entry.path))
    if wanted.exists():
        return None
    making = spares / f".making-{os.getpid()}"
    _remove(making)
    aside = spares / f".home-{os.getpid()}"  # Fossil's ~/.fossil for the checkout, not kept
    _remove(aside)
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


def older(template: Path, mark: int, lineage: str) -> int | None:
    """The mark of the spare made from an earlier version of the runs' clone, up to MARK, of the
    same LINEAGE: a pull only adds to a clone, so the record ids its checkout names still hold in
    the newer one (a clone made again has another server-code, and its ids are its own)."""
    try:
        names = os.listdir(spares_of(template))
    except OSError:
        return None
    for name in names:
        made = name.removeprefix("made-from-")
        if made != name and made.isdigit() and int(made) <= mark:
            try:
                if (spares_of(template) / name / LINEAGE).read_text().strip() == lineage:
                    return int(made)
            except OSError:
                pass
    return None


def place(template: Path, mark: int, home: Path) -> bool:
    """Move the spare made from MARK's version of TEMPLATE into HOME, a session's home before its
    unit exists, if there is one and HOME is not there: an earlier attempt's home may hold what its
    run wrote, and its preparation empties it (bounded.empty_directory). The spare is renamed
    first, so it is placed once. The node does this, not the unit's preparation: systemd binds a
    DynamicUser's home into the unit's own mounts, and nothing is renamed into it from outside."""
    if os.path.lexists(home):
        return False
    spares = spares_of(template)
    taken = spares / f"{CLAIMED}{home.name}"
    try:
        os.rename(spares / spare_name(mark), taken)
    except OSError:  # none made from this version (or the node's own crash left it elsewhere)
        return False
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
