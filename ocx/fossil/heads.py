"""Who, where and when of many artifacts at once, without their bodies.

The console (docs/console.md) asks, on every request, which posts of many threads
have no reply, how many deliveries each open record has had and which
check-ins wait on a branch: one query each from Fossil's own tables
(forumpost, tagxref, blob, rcvfrom), with the sender as rcvfrom names it
(F2). Bodies are read, one artifact at a time, only for what is shown.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from ocx.fossil.repository import Repository
from ocx.fossil.times import julian_to_datetime

_SENDER = " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid"


def _when(julian: float | None) -> datetime | None:
    return julian_to_datetime(julian) if julian is not None else None


@dataclass(frozen=True)
class ThreadPost:
    """A forum post's place and receipt (D12, F2, D9, D28), not its text."""

    hash: str
    root: str
    in_reply_to: str | None
    edit_of: str | None
    pending_moderation: bool
    sender: str | None
    rcvid: int
    received: datetime | None


def thread_posts(repository: Repository, roots: Iterable[str]) -> dict[str, list[ThreadPost]]:
    """Every post of each thread whose root post is in ROOTS, in the order received."""
    wanted = sorted(set(roots))
    found: dict[str, list[ThreadPost]] = {root: [] for root in wanted}
    if not wanted or repository._one("SELECT 1 FROM sqlite_master WHERE name='forumpost'") is None:
        return found
    marks = ",".join("?" * len(wanted))
    rows = repository._rows(
        "SELECT b.uuid, rb.uuid, ib.uuid, pb.uuid, fp.fpid IN (SELECT rid FROM private), u.login, b.rcvid, r.mtime"
        " FROM forumpost fp JOIN blob b ON b.rid=fp.fpid JOIN blob rb ON rb.rid=fp.froot"
        " LEFT JOIN blob ib ON ib.rid=fp.firt LEFT JOIN blob pb ON pb.rid=fp.fprev" + _SENDER +
        f" WHERE rb.uuid IN ({marks}) ORDER BY b.rcvid, fp.fpid", tuple(wanted))
    for hash_, root, reply_to, edit_of, private, login, rcvid, mtime in rows:
        found[root].append(ThreadPost(hash_, root, reply_to, edit_of, bool(private), login, rcvid or 0, _when(mtime)))
    return found


@dataclass(frozen=True)
class CheckinHead:
    """A check-in's branch and receipt, its comment as the event table keeps it."""

    hash: str
    branch: str
    sender: str | None
    user: str | None  # the U card (event.user): shown, never trusted
    comment: str
    rcvid: int
    received: datetime | None


def checkins_received(repository: Repository, branches: Iterable[str], after: int = 0,
                      newest: int = 50) -> list[CheckinHead]:
    """The NEWEST check-ins on BRANCHES this repository received after receipt
    AFTER, newest first."""
    wanted = sorted(set(branches))
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows = repository._rows(
        "SELECT b.uuid, x.value, u.login, e.user, coalesce(e.ecomment, e.comment, ''), b.rcvid, r.mtime"
        " FROM tagxref x JOIN tag t ON t.tagid=x.tagid JOIN blob b ON b.rid=x.rid"
        " JOIN event e ON e.objid=x.rid" + _SENDER +
        f" WHERE t.tagname='branch' AND x.tagtype>0 AND x.value IN ({marks}) AND e.type='ci' AND b.rcvid>?"
        " ORDER BY b.rcvid DESC, b.rid DESC LIMIT ?", (*wanted, after, newest))
    return [CheckinHead(hash_, branch, login, user, comment or "", rcvid or 0, _when(mtime))
            for hash_, branch, login, user, comment, rcvid, mtime in rows]


def branch_names(repository: Repository) -> list[str]:
    """Every branch with a check-in, the one with the newest check-in first."""
    return [name for (name,) in repository._rows(
        "SELECT x.value FROM tagxref x JOIN tag t ON t.tagid=x.tagid JOIN event e ON e.objid=x.rid"
        " WHERE t.tagname='branch' AND x.tagtype>0 AND e.type='ci' AND x.value IS NOT NULL"
        " GROUP BY x.value ORDER BY max(e.mtime) DESC")]
