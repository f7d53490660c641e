"""A receipt whose structural artifact has no event row yet is held (Repository.settled): Fossil 2.21
stores a web post's blob before crosslinking it, and a reader that took it for a plain file would pass
it over for good. Held for at most SETTLE_SECONDS, and the node's log names what it waits for."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from fossil.conftest import before_crosslink
from ocx.fossil.repository import SETTLE_SECONDS, Repository

pytestmark = pytest.mark.fossil


def test_a_post_without_its_event_row_is_unsettled_until_settle_seconds(served, tmp_path) -> None:
    post = served.web("alice").new_thread("settling", "a post Fossil is still crosslinking")
    with served.repository() as repo:
        rcvid = repo.sender(post).rcvid
        (crosslinked,) = repo.receipts_since(rcvid - 1)[:1]
        assert repo.unsettled(crosslinked) == [] and repo.settled(crosslinked)
    # The moment between Fossil's storing of the blob and its crosslinking, made in a copy.
    copy = before_crosslink(served.path, post, tmp_path / "mid-crosslink.fossil")
    with Repository(copy) as repo:
        (held,) = repo.receipts_since(rcvid - 1)[:1]
        assert [a.hash for a in held.artifacts if a.event_type is None] == [post]
        assert repo.unsettled(held) == [post] and not repo.settled(held)
        older = dataclasses.replace(held, time=held.time - timedelta(seconds=SETTLE_SECONDS + 1))
        assert repo.unsettled(older) == [] and repo.settled(older)  # taken as it is, never held for good
