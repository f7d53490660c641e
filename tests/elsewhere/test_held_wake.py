"""The held request's wakes (D38), on a real repository: a receipt held back while Fossil crosslinks it
is taken as it is once its hold ends (Repository.unsettled), a moment no write marks; the request must
wake then, not at its own end, or a record arriving after such a receipt starts up to 60 s late."""
from __future__ import annotations

import sqlite3
import time

from ocx.fossil import repository as fossil_repository
from ocx.fossil.repository import Repository
from ocx.node.serving.receipts import wait_for_receipts

from fossil.conftest import before_crosslink


def test_a_held_request_wakes_when_a_receipt_held_for_its_crosslink_is_taken_as_it_is(site, tmp_path):
    left = 3.0  # seconds of the hold still to go: its receipt dated back by the rest of it
    with site.served.repository() as repository:
        since = repository.max_rcvid()
    post = site.served.web("alice").new_thread("never crosslinked", "Fossil stored the blob and stopped.")
    copy = before_crosslink(site.served.path, post, tmp_path / "before-crosslink.fossil")
    db = sqlite3.connect(copy)
    with db:
        db.execute("UPDATE rcvfrom SET mtime=julianday('now')-?/86400.0 WHERE rcvid=(SELECT rcvid FROM blob "
                   "WHERE uuid=?)", (fossil_repository.SETTLE_SECONDS - left, post))
    db.close()
    with Repository(copy) as repository:
        receipt = repository.receipt(repository.sender(post).rcvid)
        assert receipt is not None and repository.unsettled(receipt) == [post]  # held back, for `left` more seconds
    started = time.monotonic()
    answer = wait_for_receipts(str(copy), since, wait=40)
    waited = time.monotonic() - started
    assert post in [a[0] for r in answer["receipts"] for a in r["artifacts"]], answer
    # Woken at the hold's end (3 s on), not at the request's own end (40 s): nothing wrote the file meanwhile.
    assert waited < 30, waited
