"""Forum threads found by their title, with their root post's sender (F2): one query on
Fossil's own event table, which writes a thread's root post as "Post: TITLE" when it
crosslinks it (a reply as "Reply: ...", an edit as "Edit: ..."). No body is read here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ocx.fossil.repository import Repository


@dataclass(frozen=True)
class TitledRoot:
    """A thread's first root post (never an edit of one) and who sent it."""

    hash: str
    sender: str | None
    rcvid: int


def roots_titled(repository: Repository, title: str) -> list[TitledRoot]:
    """The root posts titled TITLE exactly, in the order received: a new thread of that title
    by anyone is one of them, so a reader chooses by sender (ocx/node/releases/thread.py)."""
    if repository._one("SELECT 1 FROM sqlite_master WHERE name='forumpost'") is None:
        return []
    rows = repository._rows(
        "SELECT b.uuid, u.login, b.rcvid FROM event e JOIN forumpost fp ON fp.fpid=e.objid"
        " JOIN blob b ON b.rid=e.objid LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid"
        " WHERE e.type='f' AND e.comment=? AND fp.froot=fp.fpid AND fp.fprev IS NULL"
        " AND fp.fpid NOT IN (SELECT rid FROM private) ORDER BY b.rcvid, fp.fpid", (f"Post: {title}",))
    return [TitledRoot(hash_, login, rcvid or 0) for hash_, login, rcvid in rows]
