"""The lowest rid an artifact received after a given receipt can have: what spares a read of a span
of receipts the scan of every blob.

`blob.rcvid` has no index (Fossil's schema, which the node only reads), so each query of the
artifacts of receipts AFTER < rcvid <= UPTO visited every blob: 9 ms each on click.fossil's
history with 20,000 posts, and a pass with new receipts made four to six of them (its receipts,
the oversized scan, the posts' places and texts). A floor on `blob.rid`, the table's primary
key, makes each a range of the newest rows.

Fossil gives a new artifact a new row, whose rid SQLite makes one more than the largest in the
table, and gives an existing row a receipt only when it fills a phantom (content.c's
content_put_ex). So at a moment when receipt N is the newest and no phantom waits, every artifact
of a later receipt has a rid above that moment's largest, TOP, for as long as the row at TOP is
the same one (its hash and receipt): were the largest rows deleted (a purge, a shun's rebuild),
a new artifact could take their rids, and TOP's row would then be gone or another. That moment
is read in one read transaction (the newest receipt, the largest row, whether a phantom waits),
so no receipt commits between its parts. A floor of N serves every span that starts at or after
N; a span with none known, or whose TOP row changed, is read whole, as before.
"""
from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

KEPT_A_FILE = 16  # the newest moments remembered a repository: the node's pass and the runs' clone's
FILES = 8  # repository files remembered in a process (the node's own; tests open many)


class Top(NamedTuple):
    rid: int
    hash: str
    rcvid: int


_moments: OrderedDict[str, OrderedDict[int, Top]] = OrderedDict()
# Repository._execute: a query that first rolls back a cut-off write's hot journal, should one wait.
Execute = Callable[[str, tuple[object, ...]], sqlite3.Cursor]


def newest_receipt(db: sqlite3.Connection, execute: Execute, path: str) -> int:
    """The newest receipt of the repository open on DB (read through EXECUTE), its moment remembered
    when no phantom waits."""
    began = not db.in_transaction
    if began:
        db.execute("BEGIN")
    try:
        row = execute("SELECT max(rcvid) FROM rcvfrom", ()).fetchone()
        newest = int(row[0]) if row and row[0] is not None else 0
        top = execute("SELECT rid, uuid, rcvid FROM blob ORDER BY rid DESC LIMIT 1", ()).fetchone()
        phantom = execute("SELECT 1 FROM phantom LIMIT 1", ()).fetchone()
    finally:
        if began and db.in_transaction:
            db.execute("COMMIT")
    if top is not None and phantom is None and newest > 0:
        kept = _moments.setdefault(path, OrderedDict())
        _moments.move_to_end(path)
        kept[newest] = Top(int(top[0]), str(top[1]), int(top[2] or 0))
        kept.move_to_end(newest)
        while len(kept) > KEPT_A_FILE:
            kept.popitem(last=False)
        while len(_moments) > FILES:
            _moments.popitem(last=False)
    return newest


def floor(execute: Execute, path: str, after: int) -> int | None:
    """A rid every artifact of a receipt after AFTER is above, or None when none is known."""
    known = [(n, top) for n, top in _moments.get(path, {}).items() if n <= after]
    if not known:
        return None
    _, top = max(known)
    row = execute("SELECT uuid, rcvid FROM blob WHERE rid=?", (top.rid,)).fetchone()
    if row is None or (str(row[0]), int(row[1] or 0)) != (top.hash, top.rcvid):
        return None  # its largest rows deleted since: a rid may have been given again
    return top.rid
