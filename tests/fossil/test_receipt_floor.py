"""A span of receipts read above a rid floor (fossil/receipt_floor.py) finds what the scan of every
blob finds: on a real `fossil server`'s repository, as posts, check-ins, tag and ticket changes
arrive; and no floor is used where one could miss an artifact (a phantom waiting, a rid given again)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from ocx.fossil import receipt_floor
from ocx.fossil.repository import Repository


def everything_of(repo: Repository, after: int, upto: int) -> tuple:
    """What a pass reads of the receipts AFTER < rcvid <= UPTO (node_service/intake.py, node/arrivals.py)."""
    admins = repo.admins() | {"alice", "bob"}
    return (repo.receipts_since(after), repo.larger_than(0, after, upto), repo.public_stored(after, upto),
            repo.post_heads_received(after, upto), sorted(repo.posts_received(after, upto, admins)),
            repo.change_tickets_received(after, upto), repo.branches_received(after, upto),
            repo.newest_receipt_besides(after, upto, "0" * 64))


def scanned_whole(repo: Repository, after: int, upto: int) -> tuple:
    kept = dict(receipt_floor._moments)
    receipt_floor._moments.clear()
    try:
        return everything_of(repo, after, upto)
    finally:
        receipt_floor._moments.update(kept)


def test_reads_above_the_floor_find_what_the_whole_scan_finds_as_artifacts_of_every_kind_arrive(served):
    with served.repository() as repo:
        mark = repo.max_rcvid()  # the node's pass reads the newest receipt first: its moment remembered
        assert receipt_floor.floor(repo._execute, str(repo.path), mark) is not None
    root = served.web("alice").new_thread("floor", "a post after the mark")
    served.web("bob").reply(root, "and a reply")
    checkin = served.commit("alice", "floor.txt", "a check-in after the mark\n")
    served.clone("bob").tag(checkin, "audited", "pass: fine")
    ticket = served.web("alice").new_ticket("floor ticket", "opened after the mark")
    served.web("bob").ticket_change(ticket, "a change", {"status": "Review"})
    with served.repository() as repo:
        newest = repo.max_rcvid()
        floor = receipt_floor.floor(repo._execute, str(repo.path), mark)
        assert floor is not None and newest > mark
        above = everything_of(repo, mark, newest)
        assert above == scanned_whole(repo, mark, newest)
        hashes = {a.hash for r in above[0] for a in r.artifacts}
        assert {root, checkin} <= hashes and above[6] == {checkin: "trunk"} and len(above[3]) == 2
        assert len(above[5]) >= 2  # the ticket's opening and its change
        # every artifact of those receipts is above the floor: what the floor's reads rest on
        assert all(rid > floor for (rid,) in repo._rows("SELECT rid FROM blob WHERE rcvid>?", (mark,)))
        # a later span, starting past the moment, is read above the same floor, and alike
        later = above[0][2].rcvid
        assert everything_of(repo, later, newest) == scanned_whole(repo, later, newest)


def a_copy(served, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.fossil"
    shutil.copyfile(served.path, copy)
    return copy


def receive(copy: Path, uuid: str, *, rid: int | None = None, fill: bool = False) -> int:
    """A receipt of one artifact written into COPY as Fossil's content_put_ex writes one: a new row,
    or (FILL) a phantom's row given its receipt. Its rcvid."""
    db = sqlite3.connect(copy)
    try:
        rcvid = db.execute("INSERT INTO rcvfrom(uid, mtime, nonce, ipaddr) VALUES(1, julianday('now'), NULL,"
                           " '127.0.0.1')").lastrowid
        if fill:
            db.execute("UPDATE blob SET rcvid=?, size=1, content=x'00' WHERE rid=?", (rcvid, rid))
            db.execute("DELETE FROM phantom WHERE rid=?", (rid,))
        else:
            db.execute("INSERT INTO blob(rcvid, size, uuid, content) VALUES(?, 1, ?, x'00')", (rcvid, uuid))
        db.commit()
        return int(rcvid)
    finally:
        db.close()


def test_no_moment_is_remembered_while_a_phantom_waits_whose_filling_would_be_below_any_floor(served, tmp_path):
    copy = a_copy(served, tmp_path)
    db = sqlite3.connect(copy)
    phantom = db.execute("INSERT INTO blob(rcvid, size, uuid, content) VALUES(0, -1, ?, NULL)", ("a" * 64,)).lastrowid
    db.execute("INSERT INTO phantom(rid) VALUES(?)", (phantom,))
    db.commit()
    db.close()
    with Repository(copy) as repo:
        mark = repo.max_rcvid()
        assert receipt_floor.floor(repo._execute, str(repo.path), mark) is None
    filled = receive(copy, "a" * 64, rid=phantom, fill=True)
    with Repository(copy) as repo:
        found = [a.hash for r in repo.receipts_since(mark) if r.rcvid == filled for a in r.artifacts]
        assert found == ["a" * 64]


def test_a_floor_whose_top_row_was_deleted_is_not_used_for_its_rid_may_be_given_again(served, tmp_path):
    copy = a_copy(served, tmp_path)
    with Repository(copy) as repo:
        mark = repo.max_rcvid()
        assert receipt_floor.floor(repo._execute, str(repo.path), mark) is not None
    db = sqlite3.connect(copy)
    (top,) = db.execute("SELECT max(rid) FROM blob").fetchone()
    db.execute("DELETE FROM blob WHERE rid=?", (top,))  # as a purge does
    db.commit()
    db.close()
    again = receive(copy, "b" * 64)
    with Repository(copy) as repo:
        assert repo._one("SELECT rid FROM blob WHERE uuid=?", ("b" * 64,)) == (top,)  # the same rid, given again
        assert receipt_floor.floor(repo._execute, str(repo.path), mark) is None
        found = [a.hash for r in repo.receipts_since(mark) if r.rcvid == again for a in r.artifacts]
        assert found == ["b" * 64]
