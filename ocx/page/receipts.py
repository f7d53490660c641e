"""The receipts a node elsewhere asks for, and the wait for them (D37, D38).

A clone records everything it pulled as received from its own user
(fossil-facts.md), so a node elsewhere learns who sent what only here: each
receipt of the served repository after the one it names, in order, with its
time, its sender (rcvfrom, F2) and the letters Fossil gives that sender
now, and the hash, kind and privacy of everything it stored. The node acts
on the artifacts themselves, read from its own clone after a pull.

Asked to wait, the page holds the request until something arrives or at
most WAIT_MOST seconds: it watches the repository file with inotify, which
Fossil's every commit changes, and reads again at each change; it never
wakes on a timer (D38). A change of who holds admin or setup is something
for the node too (D24: a run user given admin ends its run `unenforced`),
though it is no receipt: each answer carries a digest of that list, and a
request naming the digest it knows is answered when the list differs. A receipt Fossil is still crosslinking is held
back, as the node's own pass holds it (Repository.settled), until it settles.
"""
from __future__ import annotations

import hashlib
import os
import select
import time
from typing import Any

from ..fossil import repository as fossil_repository
from ..fossil.artifacts import Receipt
from ..fossil.repository import Repository
from ..node.inotify import IN_CLOSE_WRITE, IN_MODIFY, drain, watch

WAIT_MOST = 60.0  # D38: then the node renews its request
LIMIT = 500  # receipts in one answer; `more` says when there are others after them


def receipts_answer(repository: Repository, since: int, limit: int = LIMIT) -> dict[str, Any]:
    """What `receipts since SINCE` answers: settled receipts, oldest first."""
    return _answer(repository, since, limit)[0]


def _answer(repository: Repository, since: int, limit: int) -> tuple[dict[str, Any], float | None]:
    """receipts_answer's, and when the first receipt held back for its crosslink is taken as it is
    (Unix seconds; None when none is held): a moment no write marks, so the wait must know it."""
    found = repository.receipts_since(since)
    listed: list[Receipt] = []
    held_until = None
    for receipt in found:
        if len(listed) >= limit:
            break
        if not repository.settled(receipt):
            held_until = receipt.time.timestamp() + fossil_repository.SETTLE_SECONDS
            break
        listed.append(receipt)
    senders: dict[str, str] = {}
    for receipt in listed:
        if receipt.sender is not None and receipt.sender not in senders:
            senders[receipt.sender] = "".join(sorted(_capabilities(repository, receipt.sender)))
    return {
        "admins": admins_digest(repository),
        "receipts": [{"rcvid": r.rcvid, "time": r.time.timestamp(), "sender": r.sender,
                      "artifacts": [[a.hash, a.event_type, a.private] for a in r.artifacts]} for r in listed],
        "capabilities": senders,  # each sender's letters as Fossil gives them now (C1)
        "last": listed[-1].rcvid if listed else since,
        "more": len(listed) < len(found),
    }, held_until


def _capabilities(repository: Repository, login: str) -> frozenset[str]:
    try:
        return repository.effective_capabilities(login)
    except LookupError:
        return frozenset()  # a login deleted since holds nothing


def admins_digest(repository: Repository) -> str:
    return hashlib.sha256("\n".join(sorted(repository.admins())).encode()).hexdigest()[:16]


def wait_for_receipts(repository_path: str, since: int, wait: float, limit: int = LIMIT,
                      admins: str | None = None) -> dict[str, Any]:
    """The receipts after SINCE, waiting up to WAIT seconds (at most WAIT_MOST)
    for the first, or for who holds admin or setup to differ from ADMINS (a digest)."""
    changes = watch(repository_path, IN_MODIFY | IN_CLOSE_WRITE)  # before the first read: nothing slips between
    try:
        deadline = time.monotonic() + max(0.0, min(wait, WAIT_MOST))
        while True:
            with Repository(repository_path) as repository:
                answer, held_until = _answer(repository, since, limit)
            left = deadline - time.monotonic()
            if answer["receipts"] or left <= 0 or (admins is not None and answer["admins"] != admins):
                return answer
            # A receipt whose crosslink never comes (Fossil's server killed mid-post, a blob shaped as the form's
            # one that Fossil will not crosslink) is taken as it is SETTLE_SECONDS after it came: no write marks
            # that moment, so the wait ends there too, else what came after it waits for the hold's end (D38).
            if held_until is not None:
                left = min(left, max(0.0, held_until - time.time()) + 0.05)
            ready, _, _ = select.select([changes], [], [], left)
            if ready:
                drain(changes)
    finally:
        os.close(changes)
